/**
 * The standard gRPC health protocol (`grpc.health.v1.Health/Check`), without a .proto: its two messages
 * are one field each, so they are encoded by hand.
 *
 *   message HealthCheckRequest  { string service = 1; }
 *   message HealthCheckResponse { ServingStatus status = 1; }   // UNKNOWN 0, SERVING 1, NOT_SERVING 2,
 *                                                               // SERVICE_UNKNOWN 3
 *
 * `healthServiceDefinition` is a grpc-js service definition: the probe's client calls its `check` path,
 * and a test (or an embedder) can serve it with `server.addService(healthServiceDefinition, { check })`.
 */
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';

export const ServingStatus = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;
export type ServingStatusName = (typeof ServingStatus)[number];

export interface HealthCheckRequest {
  service: string;
}

export interface HealthCheckResponse {
  /** The enum's number (1 is SERVING). */
  status: number;
}

function varint(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** Reads the fields of a message: number → last value (varint as number, length-delimited as bytes). */
function readFields(bytes: Uint8Array): Map<number, number | Uint8Array> {
  const fields = new Map<number, number | Uint8Array>();
  let i = 0;
  const readVarint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (i >= bytes.length) throw new Error('truncated varint');
      const b = bytes[i++]!;
      if (shift < 32) result += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if ((b & 0x80) === 0) return result;
    }
  };
  while (i < bytes.length) {
    const key = readVarint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) fields.set(field, readVarint());
    else if (wire === 2) {
      const len = readVarint();
      if (i + len > bytes.length) throw new Error('truncated field');
      fields.set(field, bytes.subarray(i, i + len));
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return fields;
}

export function encodeHealthCheckRequest(req: HealthCheckRequest): Buffer {
  if (!req.service) return Buffer.alloc(0);
  const text = Buffer.from(req.service, 'utf8');
  return Buffer.from([0x0a, ...varint(text.length), ...text]);
}

export function decodeHealthCheckRequest(bytes: Buffer): HealthCheckRequest {
  const service = readFields(bytes).get(1);
  return { service: service instanceof Uint8Array ? Buffer.from(service).toString('utf8') : '' };
}

export function encodeHealthCheckResponse(res: HealthCheckResponse): Buffer {
  return res.status === 0 ? Buffer.alloc(0) : Buffer.from([0x08, ...varint(res.status)]);
}

export function decodeHealthCheckResponse(bytes: Buffer): HealthCheckResponse {
  const status = readFields(bytes).get(1);
  return { status: typeof status === 'number' ? status : 0 };
}

/** The enum's name (`SERVING`), or the number for a value this protocol version does not know. */
export const servingStatusName = (status: number): string => ServingStatus[status] ?? String(status);

/** grpc-js service definition of `grpc.health.v1.Health` with its one unary method, `Check`. */
export const healthServiceDefinition = {
  check: {
    path: HEALTH_CHECK_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
    originalName: 'Check',
  },
} as const;
