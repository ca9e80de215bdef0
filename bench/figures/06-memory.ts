import type { Mode } from '../backends.js';
import { format, idleSeconds, type Row, type RssSample } from '../context.js';
import type { MemoryReading } from '../servers.js';

/** Embedded: the service with its database server; production: one instance, its database elsewhere. */
const rssLimitMb: Record<Mode, number> = { embedded: 200, production: 150, scaled: 150 };
const rssFlatShare = 0.1;

/** The load a round's reading belongs to: `1b` of `1b round 2`, nothing of `round 2`. */
const loadOf = (when: string) => when.replace(/ ?round \d+$/, '');

/**
 * Figure 6: the most memory at idle over the run, and flat when each load's settled reading after
 * its last round is within 10% of the one after its first (a figure running two loads in one
 * process may hold more for the second, which is not growth across rounds).
 */
export function figureMemoryRow(mode: Mode, samples: RssSample[]): Row {
  const limitMb = rssLimitMb[mode];
  type Reading = { sample: RssSample; reading: MemoryReading };
  const most = (readings: Reading[]) => readings.reduce((top, next) => (next.reading.mb > top.reading.mb ? next : top));
  const settledMax = most(samples.map((sample) => ({ sample, reading: sample.settledAt })));
  const idleReadings = samples.flatMap((sample) =>
    sample.idleAt === undefined ? [] : [{ sample, reading: sample.idleAt }],
  );
  const idleMax = idleReadings.length === 0 ? undefined : most(idleReadings);
  const [growth, peaks, idle, grows] = [[], [], [], []] as string[][];
  for (const figure of new Set(samples.map((sample) => sample.figure))) {
    const rounds = samples.filter((sample) => sample.figure === figure && sample.when !== 'end');
    const end = samples.find((sample) => sample.figure === figure && sample.when === 'end');
    if (end?.idleAt !== undefined) idle!.push(`fig ${figure}: ${format(end.idleAt.mb)}`);
    if (rounds.length === 0) continue;
    for (const load of new Set(rounds.map((sample) => loadOf(sample.when)))) {
      const ofLoad = rounds.filter((sample) => loadOf(sample.when) === load);
      const [first, last] = [ofLoad[0]!.settledAt.mb, ofLoad.at(-1)!.settledAt.mb];
      if (last > first * (1 + rssFlatShare))
        grows!.push(`${load === '' ? `fig ${figure}` : load} ${format(first)}→${format(last)}`);
    }
    const settled = rounds.map((sample) => format(sample.settledAt.mb)).join('→');
    growth!.push(`fig ${figure}: ${settled}${end === undefined ? '' : `, end ${format(end.settledAt.mb)}`}`);
    peaks!.push(`fig ${figure}: ${rounds.map((sample) => format(sample.peak.mb)).join('→')}`);
  }
  const unsettled = samples.filter((sample) => !sample.settled).length;
  const parts = (reading: MemoryReading) =>
    `service ${format(reading.serviceMb)} MB + database ${format(reading.databaseMb)} MB`;
  const value = idleMax?.reading.mb ?? Number.NaN;
  const flat = grows!.length === 0;
  return {
    id: '6',
    label: `service RSS + PSS of its database server processes (MB) at idle, ${idleSeconds} s after each figure's last request: the most over the run; flat = settled after a load's last round within 10% of after its first`,
    unit: 'MB',
    value,
    baseline: settledMax.reading.mb,
    baselineLabel: 'settled, 5 s after a round',
    goal: { text: `≤ ${limitMb} MB and flat`, met: value <= limitMb && flat },
    non2xx: 0,
    errors: 0,
    rounds: `idle ${idle!.join('; ')}; settled ${growth!.join('; ')}`,
    notes: [
      flat ? 'flat across rounds' : `GROWS across rounds: ${grows!.join(', ')}`,
      ...(idleMax === undefined
        ? []
        : [`the most at idle was ${parts(idleMax.reading)} (fig ${idleMax.sample.figure})`]),
      `the most settled was ${parts(settledMax.reading)} (fig ${settledMax.sample.figure} ${settledMax.sample.when})`,
      `right after the load, for information: ${peaks!.join('; ')} (at most ${format(Math.max(...samples.map((sample) => sample.peak.mb)))} MB)`,
      ...(unsettled === 0 ? [] : [`${unsettled} readings taken when the 60 s wait to settle ran out`]),
    ],
  };
}
