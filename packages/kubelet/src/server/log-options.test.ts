import test from 'ava';
import { LogRenderer } from './log-options.js';

const options = { follow: false, previous: false, timestamps: false };

test('a last line without its newline (a container that printed "admin" and exited) is shown, as upstream', (t) => {
  const r = new LogRenderer(options);
  const file =
    '2026-12-02T17:00:00.000000001Z stdout F 644\n' +
    '2026-12-02T17:00:00.000000002Z stdout F 400\n' +
    '2026-12-02T17:00:00.000000003Z stdout P admin\n';
  t.is(r.first(file), '644\n400\n');
  t.is(r.end(), 'admin');
  t.is(r.end(), '', 'once');
});

test('pieces of a line are joined when its end arrives, and nothing is left for the end', (t) => {
  const r = new LogRenderer({ ...options, timestamps: true });
  t.is(r.first('2026-12-02T17:00:00.1Z stdout P ad\n'), '');
  t.is(r.push('2026-12-02T17:00:00.2Z stdout F min\n'), '2026-12-02T17:00:00.1Z admin\n');
  t.is(r.end(), '');
});
