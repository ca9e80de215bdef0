import fs from 'node:fs';
import path from 'node:path';
import type { LoadWindow } from './context.js';

/** Where a CPU profile's time went: top self-time functions and areas (packages, src files). */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const source = url.indexOf('/src/');
  if (source >= 0) return url.slice(source + 1);
  const bench = url.indexOf('/bench/');
  if (bench >= 0) return url.slice(bench + 1);
  return url.replace(/^file:\/\//, '');
}

function areaOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  return shortUrl(url);
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  idleMs: number;
  functions: Array<{ name: string; ms: number; share: number }>;
  areas: Array<{ name: string; ms: number; share: number }>;
}

/** Self time per function within the load windows (µs, same monotonic clock as V8's profiler). */
export function summarizeProfile(file: string, windows: LoadWindow[], top = 15): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const inWindow =
    windows.length === 0 ||
    !windows.some((window) => window.startUs >= profile.startTime && window.endUs <= profile.endTime)
      ? () => true
      : (timeUs: number) => windows.some((window) => timeUs >= window.startUs && timeUs <= window.endUs);
  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  let timeUs = profile.startTime;
  profile.samples.forEach((nodeId, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    timeUs += delta;
    if (!inWindow(timeUs)) return;
    const frame = byId.get(nodeId)?.callFrame;
    if (frame === undefined) return;
    if (frame.functionName === '(idle)') {
      idleUs += delta;
      return;
    }
    totalUs += delta;
    // Sources compiled by tsx report line 1 for everything, so a line is shown only when it says something.
    const line = frame.lineNumber > 0 ? `:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'}${frame.url === '' ? '' : ` ${shortUrl(frame.url)}${line}`}`;
    functions.set(name, (functions.get(name) ?? 0) + delta);
    const area = areaOf(frame);
    areas.set(area, (areas.get(area) ?? 0) + delta);
  });
  const rank = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: us / totalUs }));
  return { file, totalMs: totalUs / 1000, idleMs: idleUs / 1000, functions: rank(functions), areas: rank(areas) };
}

export function formatProfileSummary(summary: ProfileSummary): string {
  const lines = [
    `CPU profile ${path.basename(summary.file)}: ${summary.totalMs.toFixed(0)} ms on the main thread during the load, ${summary.idleMs.toFixed(0)} ms idle`,
    'top self time by function:',
    ...summary.functions.map(
      (entry) =>
        `  ${(entry.share * 100).toFixed(1).padStart(5)}%  ${entry.ms.toFixed(0).padStart(6)} ms  ${entry.name}`,
    ),
    'top self time by area:',
    ...summary.areas.map(
      (entry) =>
        `  ${(entry.share * 100).toFixed(1).padStart(5)}%  ${entry.ms.toFixed(0).padStart(6)} ms  ${entry.name}`,
    ),
  ];
  return lines.join('\n');
}

/** Summarizes every .cpuprofile in a folder (one per service process that ran with --cpu-prof). */
export function summarizeProfileFolder(dir: string, windows: LoadWindow[]): string[] {
  return (
    fs
      .readdirSync(dir)
      // CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: thread 0 is the main thread; the others
      // are tsx's loader thread, which only works at start.
      .filter((name) => name.endsWith('.cpuprofile') && name.split('.')[4] === '0')
      .map((name) => formatProfileSummary(summarizeProfile(path.join(dir, name), windows)))
  );
}

// `node --import tsx bench/profile.ts <file.cpuprofile>`: summarize a profile taken by hand.
if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)
) {
  for (const file of process.argv.slice(2)) console.log(formatProfileSummary(summarizeProfile(file, [])));
}
