import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { applyOwnOomScoreAdj } from './own-oom-score-adj.js';

// The kubelet's own oom_score_adj (`oomScoreAdj`, upstream -999): written at start; where the kernel
// refuses it the kubelet says once why, and goes on.

const CAP_SYS_RESOURCE = 24n;
const hasSysResource = (): boolean => {
  const line = readFileSync('/proc/self/status', 'utf8').match(/^CapEff:\s*([0-9a-f]+)$/m);
  return line !== null && ((BigInt(`0x${line[1]}`) >> CAP_SYS_RESOURCE) & 1n) === 1n;
};

test('oomScoreAdj is written to the file given', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-oom-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'oom_score_adj');
  writeFileSync(file, '0\n');
  const sink = new MemorySink();
  t.true(await applyOwnOomScoreAdj(-999, createLogger({ sink: sink.sink }), file));
  t.is(readFileSync(file, 'utf8'), '-999');
  t.deepEqual(sink.find('oomScoreAdj'), []);
});

test('on this process: lowered with CAP_SYS_RESOURCE; without it the refusal is reported once, naming the setting and the cause', async (t) => {
  const sink = new MemorySink();
  const logger = createLogger({ sink: sink.sink });
  const before = readFileSync('/proc/self/oom_score_adj', 'utf8').trim();
  const target = Number(before) - 1;
  if (hasSysResource()) {
    t.true(await applyOwnOomScoreAdj(target, logger));
    t.is(readFileSync('/proc/self/oom_score_adj', 'utf8').trim(), String(target));
    return;
  }
  t.log('this process lacks CAP_SYS_RESOURCE: the kernel refuses to lower its oom_score_adj');
  t.false(await applyOwnOomScoreAdj(target, logger));
  t.false(await applyOwnOomScoreAdj(target, logger), 'still refused');
  const warnings = sink.find('oomScoreAdj');
  t.is(warnings.length, 1, 'said once');
  t.is(warnings[0]!.level, 'warn');
  t.regex(
    warnings[0]!.message,
    new RegExp(
      `^oomScoreAdj: the kubelet's oom_score_adj stays as it was, not ${target}: the kernel refused \\(EACCES\\): lowering it needs CAP_SYS_RESOURCE`,
    ),
  );
  t.is(readFileSync('/proc/self/oom_score_adj', 'utf8').trim(), before, 'unchanged');
});

test('a missing file is reported too, and is not fatal', async (t) => {
  const sink = new MemorySink();
  t.false(await applyOwnOomScoreAdj(-999, createLogger({ sink: sink.sink }), '/nonexistent/oom_score_adj'));
  t.regex(sink.find('oomScoreAdj')[0]!.message, /cannot write \/nonexistent\/oom_score_adj \(ENOENT\)/);
});
