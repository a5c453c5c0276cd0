#!/usr/bin/env node
import { run } from './cli.js';
import { holdYoungGeneration } from './proxy-heap.js';

/**
 * The `nodelet` command. Every error that stops a command is one line on stderr, `nodelet: <message>`,
 * and exit code 1: users see what to fix, not a stack trace.
 */
const io = {
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
};

// A process-wide V8 setting, so here and not in `runProxy` (which tests and `nodelet up` call in-process).
if (process.argv[2] === 'proxy') holdYoungGeneration();

try {
  const result = await run(process.argv.slice(2), io);
  if (result !== 'running') {
    process.exitCode = result;
  }
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`nodelet: ${message.split('\n').join(' ')}\n`);
  if (process.env.NODELET_TRACE && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
  process.exit(
    typeof (err as { exitCode?: unknown }).exitCode === 'number' ? (err as { exitCode: number }).exitCode : 1,
  );
}
