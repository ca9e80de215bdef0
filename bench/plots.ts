import { ratioText, valueText, type Row } from './context.js';
import type { ModeResult } from './results.js';

/** BENCHMARKS.md's plots: horizontal bar charts as hand-written SVG, readable without colour (✓/✗ beside each bar). */

export interface Bar {
  label: string;
  value: number;
  /** The number written beside the bar. */
  text: string;
  /** Goal met, missed, or undefined for information and references. */
  met?: boolean;
  /** Where the goal's limit falls, on the bar's own scale. */
  mark?: number;
  reference?: boolean;
}

export interface Section {
  title: string;
  bars: Bar[];
  /** Logarithmic axis (latencies from 1 ms to seconds). */
  log?: boolean;
  /** The axis ends here; longer bars are cut and end in an arrow. */
  max?: number;
}

const width = 720;
const [labelX, plotX, plotEnd, textX] = [8, 190, 560, 570];
const pitch = 22;
// Okabe–Ito: blue and vermillion tell apart for every common colour blindness; grey is information.
const colours = { met: '#0072B2', missed: '#D55E00', info: '#999999', reference: '#CCCCCC' };

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const text = (x: number, y: number, content: string, attributes = '') =>
  `<text x="${x}" y="${y}"${attributes}>${escape(content)}</text>`;

function niceMax(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  return ([1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].find((step) => step * power >= value) ?? 10) * power;
}

function scale(section: Section): { x: (value: number) => number; ticks: number[] } {
  const values = section.bars.flatMap((bar) => [bar.value, bar.mark ?? 0]).filter(Number.isFinite);
  const span = plotEnd - plotX;
  if (section.log) {
    const top = 10 ** Math.ceil(Math.log10(Math.max(10, ...values)));
    const ticks = Array.from({ length: Math.log10(top) + 1 }, (_, power) => 10 ** power);
    return { x: (value) => plotX + (Math.log10(Math.max(1, value)) / Math.log10(top)) * span, ticks };
  }
  const top = section.max ?? niceMax(Math.max(...values, 1e-9) * 1.05);
  const step = [1, 2, 2.5, 5, 10]
    .map((factor) => factor * 10 ** Math.floor(Math.log10(top / 5)))
    .find((s) => top / s <= 6)!;
  const ticks = Array.from({ length: Math.floor(top / step + 1e-9) + 1 }, (_, n) => n * step);
  return { x: (value) => plotX + (Math.min(value, top) / top) * span, ticks };
}

export function barChart(title: string, sections: Section[], notes: string[]): string {
  const parts: string[] = [];
  let y = 30;
  parts.push(text(labelX, 20, title, ' font-size="15" font-weight="bold"'));
  for (const section of sections) {
    const { x, ticks } = scale(section);
    y += 12;
    parts.push(text(labelX, y + 4, section.title, ' font-weight="bold"'));
    y += 10;
    const top = y;
    y += 6;
    for (const bar of section.bars) {
      const end = Number.isFinite(bar.value) ? x(bar.value) : plotX;
      const colour = colours[bar.reference ? 'reference' : bar.met === undefined ? 'info' : bar.met ? 'met' : 'missed'];
      parts.push(text(labelX, y + 12, bar.label));
      parts.push(
        `<rect x="${plotX}" y="${y + 2}" width="${Math.max(1, end - plotX).toFixed(1)}" height="14" fill="${colour}"/>`,
      );
      if (section.max !== undefined && bar.value > section.max)
        parts.push(`<path d="M${end} ${y} l8 9 l-8 9 z" fill="${colour}"/>`);
      if (bar.mark !== undefined && Number.isFinite(bar.mark)) {
        const markX = x(bar.mark).toFixed(1);
        parts.push(`<line x1="${markX}" x2="${markX}" y1="${y - 1}" y2="${y + 19}" stroke="#000" stroke-width="2"/>`);
      }
      const mark = bar.met === undefined || bar.reference === true ? '' : bar.met ? ' ✓' : ' ✗';
      parts.push(text(textX, y + 12, `${bar.text}${mark}`));
      y += pitch;
    }
    for (const tick of ticks) {
      const tickX = x(tick).toFixed(1);
      parts.push(`<line x1="${tickX}" x2="${tickX}" y1="${top}" y2="${y}" stroke="#000" stroke-opacity="0.15"/>`);
      const label = tick >= 1000 ? `${tick / 1000}k` : String(tick);
      parts.push(text(Number(tickX), y + 12, label, ' text-anchor="middle" fill="#444"'));
    }
    y += 18;
  }
  for (const note of notes) parts.push(text(labelX, (y += 16), note, ' fill="#444"'));
  const height = y + 12;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

/** The number in a goal's text after `pattern`, e.g. 0.85 of `ratio ≥ 0.85`. */
function goalNumber(row: Row, pattern: RegExp): number | undefined {
  const match = pattern.exec(row.goal.text);
  return match === null ? undefined : Number(match[1]!.replaceAll(',', ''));
}
const leastRatio = (row: Row) => goalNumber(row, /ratio ≥ ([\d.]+)/);
const met = (row: Row) => (row.goal.text === 'information' ? undefined : row.goal.met);

/** The limit of a p99 row, in ms: absolute (`≤ 10 ms`) or a multiple of its baseline (`≤ 2×`, `ratio ≤ 1.25`). */
function latencyLimit(row: Row): number | undefined {
  const times = goalNumber(row, /≤ ([\d.]+)×/) ?? goalNumber(row, /ratio ≤ ([\d.]+)/);
  return goalNumber(row, /[≤<] ([\d,.]+) ms/) ?? (times === undefined ? undefined : times * row.baseline!);
}

/** The bars `draw` makes of each row `pick` takes, per mode, in the order of the rows. */
function perMode(modes: ModeResult[], pick: (row: Row) => boolean, draw: (row: Row, mode: string) => Bar[]): Bar[] {
  const ids = [...new Set(modes.flatMap((result) => result.rows.filter(pick).map((row) => row.id)))];
  return ids.flatMap((id) =>
    modes.flatMap((result) => result.rows.filter((row) => row.id === id).flatMap((row) => draw(row, result.mode))),
  );
}

export function plots(modes: ModeResult[]): { name: string; title: string; svg: string }[] {
  const isRatio = (row: Row) => row.unit === 'req/s' && row.ratio !== undefined && row.baseline !== undefined;
  const ratioBar = (row: Row, mode: string): Bar[] => [
    { label: `${row.id} · ${mode}`, value: row.ratio!, text: ratioText(row), met: met(row), mark: leastRatio(row) },
  ];
  const latencyBar = (row: Row, mode: string): Bar[] => [
    { label: `${row.id} · ${mode}`, value: row.value, text: valueText(row), met: met(row), mark: latencyLimit(row) },
  ];
  const storesBars = (row: Row, mode: string): Bar[] => [
    { label: `one store · ${mode}`, value: row.baseline!, text: valueText(row, row.baseline), reference: true },
    {
      label: `10,000 stores · ${mode}`,
      value: row.value,
      text: `${valueText(row)} (${ratioText(row)}×)`,
      met: met(row),
      mark: (leastRatio(row) ?? Number.NaN) * row.baseline!,
    },
  ];
  const legend =
    '│ the goal · blue ✓ met · vermillion ✗ missed (on the good side of its mark: another part of its goal missed)';
  const info = 'grey: information, no goal';
  const charts = [
    {
      name: 'ratios.svg',
      title: 'Throughput against the yardsticks',
      svg: barChart(
        'Answers a second against the yardstick’s (the ratio), per mode',
        [
          {
            title: 'Against the figures’ own yardsticks',
            bars: perMode(modes, (row) => isRatio(row) && !row.id.startsWith('9'), ratioBar),
            max: 2,
          },
          {
            title: 'Against Better Auth (figure 9)',
            bars: perMode(modes, (row) => isRatio(row) && row.id.startsWith('9'), ratioBar),
          },
        ],
        [legend, `${info} · bars past 2 end in an arrow`],
      ),
    },
    {
      name: 'latency.svg',
      title: 'Latency percentiles against their limits',
      svg: barChart(
        'p99 latency against its limit (ms, logarithmic)',
        [
          {
            title: 'p99 per mode; the mark is the limit (absolute, or a multiple of the idle or baseline p99)',
            bars: perMode(modes, (row) => row.unit === 'ms' && /p99/.test(row.label), latencyBar),
            log: true,
          },
        ],
        [legend, info],
      ),
    },
    {
      name: 'stores.svg',
      title: 'One store beside 10,000 stores',
      svg: barChart(
        'One store beside 10,000 stores (answers a second)',
        [
          { title: '13a: logins a second', bars: perMode(modes, (row) => row.id === '13a', storesBars) },
          { title: '13b: session checks a second', bars: perMode(modes, (row) => row.id === '13b', storesBars) },
        ],
        ['light grey: one store · │ the goal (0.95 × one store) · blue ✓ met · vermillion ✗ missed'],
      ),
    },
  ];
  // A partial run may lack a chart's rows: draw only the charts that have bars.
  return charts.filter((chart) => chart.svg.includes('<rect x='));
}
