/** What the conformance suite's cases share: the refusal assertion and small request builders. */
import type { ExecutionContext } from 'ava';
import { NodeletError, type ErrorCode } from '@nodelet/kernel';
import { ImageSpec } from '../index.js';
import { clock, type Kit } from './kit.js';

export type T = ExecutionContext<unknown>;

/** Declares one serial case of the suite, titled with the target's name. */
export type It = (title: string, fn: (t: T, kit: Kit) => Promise<void>) => void;

export const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
export const nowNanos = () => BigInt(clock.now()) * 1_000_000n;

/** Asserts that `promise` rejects with a NodeletError of `code` (or one of `codes`) and returns it. */
export async function rejects(
  t: T,
  promise: Promise<unknown>,
  codes: ErrorCode | ErrorCode[],
  message?: RegExp,
) {
  const err = await t.throwsAsync(promise);
  t.true(err instanceof NodeletError, `expected a NodeletError, got ${String(err)}`);
  const wanted = Array.isArray(codes) ? codes : [codes];
  t.true(wanted.includes((err as NodeletError).code), `code ${(err as NodeletError).code}: ${err?.message}`);
  if (message) t.regex(err!.message, message);
  return err as NodeletError;
}

/**
 * Stop of an id that is gone: the CRI contract (api.proto) makes StopPodSandbox and StopContainer
 * idempotent, and CRI-O and containerd from 1.7 succeed; containerd 1.6 still answers NotFound. Either
 * passes here; any other failure does not.
 */
export async function stopOfGoneSucceeds(t: T, promise: Promise<unknown>, what: string): Promise<void> {
  try {
    await promise;
    t.pass(`${what} of what is gone succeeds`);
  } catch (err) {
    t.true(
      err instanceof NodeletError && err.code === 'NotFound' && /not found/.test(err.message),
      `${what} of what is gone: succeeds, or NotFound on containerd 1.6; got ${String(err)}`,
    );
  }
}

/** Codes runtimes use for "not in a state that allows this": the fake's typed one, containerd 1.6's UNKNOWN. */
export const REFUSED: ErrorCode[] = ['FailedPrecondition', 'Internal', 'NotFound'];

export const image = (name: string) => ImageSpec.fromPartial({ image: name, userSpecifiedImage: name });
export const sorted = (ids: string[]) => [...ids].sort();
