import test from 'ava';
import { formatInZone, parseCronSchedule } from './cron-schedule.js';

// Cron schedules as robfig/cron's standard parser reads them, in UTC and in zones with daylight saving.

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

test('steps, ranges, lists, names and macros', (t) => {
  const start = at('2026-01-01T00:00:00Z'); // a Thursday
  t.is(iso(parseCronSchedule('*/5 * * * *').next(start)), '2026-01-01T00:05:00.000Z');
  t.is(iso(parseCronSchedule('*/5 * * * *').prev(at('2026-01-01T00:14:59Z'))), '2026-01-01T00:10:00.000Z');
  t.is(iso(parseCronSchedule('30 6-16/4 * * 1-5').next(start)), '2026-01-01T06:30:00.000Z');
  t.is(iso(parseCronSchedule('0 0 * * MON').next(start)), '2026-01-05T00:00:00.000Z');
  t.is(iso(parseCronSchedule('0 12 1 FEB *').next(start)), '2026-02-01T12:00:00.000Z');
  t.is(iso(parseCronSchedule('@hourly').next(start)), '2026-01-01T01:00:00.000Z');
  t.is(iso(parseCronSchedule('@monthly').next(start)), '2026-02-01T00:00:00.000Z');
  t.is(iso(parseCronSchedule('0 0 29 2 *').next(start)), '2028-02-29T00:00:00.000Z');
});

test('both day fields restricted: a day matching either runs', (t) => {
  // The 15th, or any Monday.
  const s = parseCronSchedule('0 0 15 * 1');
  t.is(iso(s.next(at('2026-01-01T00:00:00Z'))), '2026-01-05T00:00:00.000Z');
  t.is(iso(s.next(at('2026-01-12T00:00:00Z'))), '2026-01-15T00:00:00.000Z');
});

test('bad schedules say what is wrong', (t) => {
  t.throws(() => parseCronSchedule('* * * *'), { message: 'expected exactly 5 fields, found 4: [* * * *]' });
  t.throws(() => parseCronSchedule('61 * * * *'), { message: /above maximum \(59\)/ });
  t.throws(() => parseCronSchedule('@every 5m'), { message: /unrecognized descriptor/ });
  t.throws(() => parseCronSchedule('*/0 * * * *'), { message: /step of range should be a positive number/ });
  t.throws(() => parseCronSchedule('TZ=UTC * * * * *'), { message: /TZ/ });
});

test('time zones follow daylight saving: 02:30 daily in New York across the March change', (t) => {
  const s = parseCronSchedule('30 7 * * *', 'America/New_York');
  t.is(iso(s.next(at('2026-03-07T00:00:00Z'))), '2026-03-07T12:30:00.000Z', 'EST: UTC-5');
  t.is(iso(s.next(at('2026-03-08T13:00:00Z'))), '2026-03-09T11:30:00.000Z', 'EDT: UTC-4');
  t.is(formatInZone(at('2026-03-09T11:30:00Z'), 'America/New_York'), '2026-03-09T07:30:00-04:00');
  t.is(formatInZone(at('2026-01-02T00:00:00Z'), 'Asia/Kolkata'), '2026-01-02T05:30:00+05:30');
});
