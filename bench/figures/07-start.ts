import { format, median, type Row } from '../context.js';

const firstStartLimitSeconds = 5;
const restartLimitSeconds = 2;

/** Figure 7: the first start on an empty data folder, and the median restart. */
export function figureStartRow(starts: number[]): Row {
  const [first, ...restarts] = starts as [number, ...number[]];
  const restart = median(restarts);
  return {
    id: '7',
    label: 'start (s): the first on an empty data folder; baseline: the median restart',
    unit: 's',
    value: first,
    baseline: restart,
    baselineLabel: 'restart',
    goal: {
      text: `first ≤ ${firstStartLimitSeconds} s, restart ≤ ${restartLimitSeconds} s`,
      met: first <= firstStartLimitSeconds && restart <= restartLimitSeconds,
    },
    non2xx: 0,
    errors: 0,
    rounds: starts.map((seconds) => format(seconds, 1)).join(', '),
    notes: [],
  };
}
