import assert from 'node:assert/strict';
import { startMetricsServer } from '../../src/http/operations/metrics-server.js';
import type { TestApp } from './harness.js';

/** Reading the metrics listener as Prometheus scrapes it. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (no escaped quotes in the values read here). */
export function samplesOf(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      assert.ok(match !== null, `not a sample line: ${line}`);
      const labels = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)].map(([, k, v]) => [k!, v!]),
      );
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** GET /metrics from the metrics listener, as Prometheus scrapes it. */
export async function scrape(t: TestApp): Promise<Sample[]> {
  const { server, address } = await startMetricsServer(t.services.metrics, 0, '127.0.0.1');
  try {
    const response = await fetch(address);
    assert.equal(response.status, 200);
    return samplesOf(await response.text());
  } finally {
    server.close();
  }
}

/** The samples of `name` whose labels include every one of `labels`. */
export function find(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
}

/** The sum of the samples `find` returns (0 when there is none). */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return find(samples, name, labels).reduce((sum, sample) => sum + sample.value, 0);
}
