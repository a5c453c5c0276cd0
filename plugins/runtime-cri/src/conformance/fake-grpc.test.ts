// The CRI conformance suite against the fake runtime served over gRPC (serveCri on a unix socket),
// reached through the runtime-cri plugin: the wire and the client must change nothing.
import { defineConformance } from './suite.js';
import { fakeOverGrpc } from './targets.js';

defineConformance('fake over gRPC', fakeOverGrpc);
