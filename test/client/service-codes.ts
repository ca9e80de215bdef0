import type { CodePurpose } from '../helpers/harness.js';
import type { ServiceProcess } from '../helpers/service-process.js';

export type { CodePurpose };

/**
 * The newest six-digit code sent to `to` for `purpose`, read from the service's `log` transport
 * lines at or after index `from` of `service.logs`. Waits for the line as the service writes it.
 */
export function waitForCode(
  service: ServiceProcess,
  to: string,
  purpose: CodePurpose,
  { from = 0, timeoutMs = 15_000 }: { from?: number; timeoutMs?: number } = {},
): Promise<string> {
  const stdout = service.child.stdout!;
  return new Promise((resolve, reject) => {
    const find = (): string | undefined => {
      for (let i = service.logs.length - 1; i >= from; i--) {
        const entry = service.logs[i]!;
        if (entry['to'] !== to || entry['purpose'] !== purpose || typeof entry['text'] !== 'string') continue;
        const match = /code is (\d{6})\b/.exec(entry['text']);
        if (match !== null) return match[1];
      }
      return undefined;
    };
    const check = () => {
      const code = find();
      if (code === undefined) return;
      finish();
      resolve(code);
    };
    // The helper's own line reader runs first on each chunk; look once it has parsed the lines.
    const onData = () => setImmediate(check);
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`no ${purpose} code for ${to} in the service log within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      stdout.off('data', onData);
    };
    stdout.on('data', onData);
    check();
  });
}
