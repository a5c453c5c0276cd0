/**
 * The CRI conformance suite: one set of ava tests, run against every CRI provider (the fake
 * in-process, a runtime behind a socket, real containerd). Each provider's test file calls
 * `defineConformance(name, factory)` with a factory of its own target. Tests run serially per target
 * (timings stay honest on a busy machine) and clean up every sandbox they create.
 *
 * Where runtimes legitimately differ the tests assert what the kubelet relies on: the state, the
 * exit code, the error *code* where the runtime gives a meaningful one (NotFound, DeadlineExceeded),
 * and otherwise that the call is refused with the message's gist (containerd 1.6 answers UNKNOWN
 * where the fake has a typed code, e.g. FailedPrecondition). See the package README.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { PodSandboxFilter } from '../index.js';
import type { It } from './assertions.js';
import { containerTests } from './container-tests.js';
import { execAndLogTests } from './exec-log-tests.js';
import { imageTests } from './image-tests.js';
import { Kit, removePod, type ConformanceFactory, type ConformanceOptions } from './kit.js';
import { sandboxTests } from './sandbox-tests.js';

export function defineConformance(
  targetName: string,
  factory: ConformanceFactory,
  options: ConformanceOptions = {},
): void {
  let kit: Kit | undefined;
  const runId = `${process.pid}-${randomBytes(4).toString('hex')}`;

  test.before(async () => {
    const target = await factory();
    const logRoot = await mkdtemp(join(tmpdir(), 'nodelet-conformance-'));
    kit = new Kit(target, runId, logRoot);
  });

  test.after.always(async () => {
    if (!kit) return;
    // Anything a failed test left: every sandbox labelled with this run.
    const { items } = await kit.runtime
      .listPodSandbox({ filter: PodSandboxFilter.fromPartial({ labelSelector: kit.selector() }) })
      .catch(() => ({ items: [] }));
    for (const s of items) await removePod(kit.runtime, s.id).catch(() => undefined);
    await kit.target.close();
    await rm(kit.logRoot, { recursive: true, force: true });
  });

  const it: It = (title, fn) => test.serial(`${targetName}: ${title}`, (t) => fn(t, kit!));

  sandboxTests(it);
  containerTests(it);
  execAndLogTests(it);
  imageTests(it, options);
}
