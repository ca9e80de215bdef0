import fs from 'node:fs';
import path from 'node:path';
import type { LoadWindow } from './context.js';

/** Where a CPU profile's time went within the load windows: top self time by function and by area (package, file). */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const afterModules = (url: string) => url.slice(url.lastIndexOf('node_modules/') + 'node_modules/'.length);

function shortUrl(url: string): string {
  if (url.includes('node_modules/')) return afterModules(url);
  const at = ['/src/', '/bench/'].map((folder) => url.indexOf(folder)).find((index) => index >= 0);
  return at === undefined ? url.replace(/^file:\/\//, '') : url.slice(at + 1);
}

function areaOf({ url, functionName }: CallFrame): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  if (!url.includes('node_modules/')) return shortUrl(url);
  const [scope, name] = afterModules(url).split('/');
  return scope!.startsWith('@') ? `${scope}/${name}` : scope!;
}

/** Self time per function and area within the load windows (µs, the same monotonic clock as V8's profiler). */
export function summarizeProfile(file: string, windows: LoadWindow[], top = 15): string {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const usable = windows.some((window) => window.startUs >= profile.startTime && window.endUs <= profile.endTime);
  const inWindow = (timeUs: number) =>
    !usable || windows.some((window) => timeUs >= window.startUs && timeUs <= window.endUs);
  const [functions, areas] = [new Map<string, number>(), new Map<string, number>()];
  let [totalUs, idleUs, timeUs] = [0, 0, profile.startTime];
  profile.samples.forEach((nodeId, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    timeUs += delta;
    const frame = byId.get(nodeId);
    if (!inWindow(timeUs) || frame === undefined) return;
    if (frame.functionName === '(idle)') {
      idleUs += delta;
      return;
    }
    totalUs += delta;
    // Sources compiled by tsx report line 1 for everything, so a line is shown only when it says something.
    const line = frame.lineNumber > 0 ? `:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'}${frame.url === '' ? '' : ` ${shortUrl(frame.url)}${line}`}`;
    functions.set(name, (functions.get(name) ?? 0) + delta);
    areas.set(areaOf(frame), (areas.get(areaOf(frame)) ?? 0) + delta);
  });
  const ranked = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([name, us]) =>
          `  ${((us / totalUs) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`,
      );
  return [
    `CPU profile ${path.basename(file)}: ${(totalUs / 1000).toFixed(0)} ms on the main thread during the load, ${(idleUs / 1000).toFixed(0)} ms idle`,
    'top self time by function:',
    ...ranked(functions),
    'top self time by area:',
    ...ranked(areas),
  ].join('\n');
}

/** Summarizes every main-thread .cpuprofile in a folder (CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile, thread 0). */
export function summarizeProfileFolder(dir: string, windows: LoadWindow[]): string[] {
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile') && name.split('.')[4] === '0')
    .map((name) => summarizeProfile(path.join(dir, name), windows));
}

// `node --import tsx bench/profile.ts <file.cpuprofile>`: summarize a profile taken by hand.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname))
  for (const file of process.argv.slice(2)) console.log(summarizeProfile(file, []));
