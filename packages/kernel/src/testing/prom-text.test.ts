// The strict Prometheus text parser the metrics tests rely on: it accepts what prom-client writes and
// refuses what a Prometheus server would.
import test from 'ava';
import { parsePrometheusText, sampleValue } from './prom-text.js';

// As prom-client writes them.
const exposition = [
  '# HELP c_total a\\nb',
  '# TYPE c_total counter',
  'c_total{l="x\\"y\\\\z"} 2',
  '',
  '# HELP h_seconds h',
  '# TYPE h_seconds histogram',
  'h_seconds_bucket{le="1"} 0',
  'h_seconds_bucket{le="2"} 1',
  'h_seconds_bucket{le="+Inf"} 1',
  'h_seconds_sum 1.5',
  'h_seconds_count 1',
  '',
].join('\n');

test('reads counters with escaped labels and histograms', (t) => {
  const families = parsePrometheusText(exposition);
  t.is(families.get('c_total')?.help, 'a\\nb');
  t.is(families.get('c_total')?.type, 'counter');
  t.is(sampleValue(families, 'c_total', { l: 'x"y\\z' }), 2);
  t.is(sampleValue(families, 'h_seconds_bucket', { le: '1' }), 0);
  t.is(sampleValue(families, 'h_seconds_bucket', { le: '+Inf' }), 1);
  t.is(sampleValue(families, 'h_seconds_count'), 1);
});

test('timestamps are read', (t) => {
  const f = parsePrometheusText('# TYPE g gauge\ng{a="1"} 3.5 1700000000000\n');
  t.is(f.get('g')!.samples[0]!.timestampMs, 1_700_000_000_000);
});

for (const [what, text, message] of [
  ['a bad value', 'x 1,5\n', /bad value/],
  ['a duplicate series', 'x{a="1"} 1\nx{a="1"} 2\n', /twice/],
  ['a TYPE after samples', 'x 1\n# TYPE x gauge\n', /TYPE of x after its samples/],
  ['a bad escape', 'x{a="\\t"} 1\n', /bad escape/],
  ['an unquoted label', 'x{a=1} 1\n', /must be quoted/],
  ['a negative counter', '# TYPE x counter\nx -1\n', /negative/],
  ['a histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n', /\+Inf/],
  ['no final newline', 'x 1', /newline/],
  ['a bad metric name', '1x 1\n', /bad metric name/],
] as const) {
  test(`refuses ${what}`, (t) => {
    t.throws(() => parsePrometheusText(text), { message });
  });
}
