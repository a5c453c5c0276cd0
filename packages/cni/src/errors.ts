import { type ErrorCode, NodeletError } from '@nodelet/kernel';

/** The commands of the CNI execution protocol. */
export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'STATUS' | 'GC';

/** The well-known error codes of the CNI spec (0–99 are reserved; plugins use 100 and up). */
export const CniErrorCodes = Object.freeze({
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironmentVariables: 4,
  IoFailure: 5,
  DecodingFailure: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  PluginNotAvailableLimitedConnectivity: 51,
});

/** The error object a CNI plugin prints on stdout when it fails. */
export interface CniErrorBody {
  readonly cniVersion?: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

/** Where a failure happened, as far as it is known. */
export interface CniErrorContext {
  /** The plugin's `type` (its binary name). */
  readonly plugin?: string;
  /** The network's `name`. */
  readonly network?: string;
  /** The configuration file the network came from. */
  readonly confPath?: string;
  readonly command?: CniCommand;
  /** The plugin's own error, when it printed one. */
  readonly body?: CniErrorBody;
}

/**
 * A failure of pod networking. `code` is the kernel's (callers decide retry versus give up by it);
 * the CNI side — plugin, network, file, command and the plugin's `{code,msg,details}` — rides along.
 *
 *     CNI plugin bridge (network "nodelet" in /etc/cni/net.d/10-nodelet.conflist) failed: …
 */
export class CniError extends NodeletError {
  readonly plugin?: string;
  readonly network?: string;
  readonly confPath?: string;
  readonly command?: CniCommand;
  /** The plugin's CNI error code (see `CniErrorCodes`), when it printed an error object. */
  readonly cniCode?: number;
  readonly cniMsg?: string;
  readonly cniDetails?: string;

  constructor(
    code: ErrorCode,
    message: string,
    context: CniErrorContext = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.plugin = context.plugin;
    this.network = context.network;
    this.confPath = context.confPath;
    this.command = context.command;
    this.cniCode = context.body?.code;
    this.cniMsg = context.body?.msg;
    this.cniDetails = context.body?.details || undefined;
  }
}

/**
 * The kernel error code for a CNI error code: `TryAgainLater` and the STATUS codes are `Unavailable`
 * (retry), configuration problems `FailedPrecondition` (retrying will not help until the node's CNI
 * configuration changes), a bad request `InvalidInput`, an unknown container `NotFound`, anything else
 * — plugin-specific codes included — `Internal`.
 */
export function kernelCodeForCniCode(code: number | undefined): ErrorCode {
  switch (code) {
    case CniErrorCodes.TryAgainLater:
    case CniErrorCodes.PluginNotAvailable:
    case CniErrorCodes.PluginNotAvailableLimitedConnectivity:
      return 'Unavailable';
    case CniErrorCodes.IncompatibleVersion:
    case CniErrorCodes.UnsupportedField:
    case CniErrorCodes.InvalidNetworkConfig:
      return 'FailedPrecondition';
    case CniErrorCodes.InvalidEnvironmentVariables:
      return 'InvalidInput';
    case CniErrorCodes.UnknownContainer:
      return 'NotFound';
    default:
      return 'Internal';
  }
}
