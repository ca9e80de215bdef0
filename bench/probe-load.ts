import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOpenLoad, useClientAddressBlock, type LoadResult, type OpenLoadOptions } from './load.js';

/**
 * Figure 5's probe generator, a child process: in the benchmark's own process the probes would wait
 * behind its event loop, busy driving the logins, and the figure would measure the benchmark.
 */

type Reply = { ready: true } | { result: LoadResult } | { error: string };

/** Starts the child; resolves once it is loaded and waiting for a run. */
export async function startProbeGenerator() {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const nextReply = () =>
    new Promise<Reply>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`probe generator exited with ${code}`));
      child.once('exit', onExit);
      child.once('message', (reply: Reply) => {
        child.off('exit', onExit);
        resolve(reply);
      });
    });
  await nextReply();
  return {
    async run(run: Omit<OpenLoadOptions, 'body' | 'headers'>): Promise<LoadResult> {
      const reply = nextReply();
      child.send(run);
      const answer = await reply;
      if ('error' in answer) throw new Error(`probe generator: ${answer.error}`);
      if (!('result' in answer)) throw new Error('probe generator answered out of turn');
      return answer.result;
    },
    async close() {
      child.disconnect();
      await exited;
    },
  };
}

// The child: runs each probe run it is sent (GETs: no body) and answers with its result, until disconnected.
if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // 11.0.0.0/8: the benchmark's own requests count up through 10.0.0.0/8.
  useClientAddressBlock(11);
  process.on('message', (run: OpenLoadOptions) => {
    runOpenLoad(run).then(
      (result) => process.send!({ result } satisfies Reply),
      (error: unknown) => process.send!({ error: String(error) } satisfies Reply),
    );
  });
  process.send!({ ready: true } satisfies Reply);
}
