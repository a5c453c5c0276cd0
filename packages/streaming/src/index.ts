export * from './spdy/frames.js';
export { SPDY3_DICTIONARY } from './spdy/dictionary.js';
export { encodeHeaderBlock, decodeHeaderBlock, type SpdyHeaders } from './spdy/header-block.js';
export { SpdySession, SpdyStream, type SpdySessionOptions } from './spdy/session.js';
export { dialSpdy, UpgradeRefusedError, type SpdyDialResult } from './spdy/dial.js';
export * from './remotecommand/protocol.js';
export type { RemoteCommandHandler, ExecStreams, ExecOptions } from './remotecommand/handler.js';
export { spdyExecClient, exitCodeOf } from './remotecommand/spdy-client.js';
export * from './portforward/handler.js';
export { spdyPortForwardClient, type SpdyPortForwardClient } from './portforward/spdy-client.js';
export { proxyUpgrade } from './proxy.js';
export { rejectUpgrade } from './http-reply.js';
export {
  handleExecUpgrade,
  handleAttachUpgrade,
  handlePortForwardUpgrade,
  type StreamTarget,
} from './upgrade.js';
