import { after, before } from 'node:test';

/**
 * Something a whole `describe` shares: opened before its first test and closed after its last.
 * Returns a getter, since the value exists only once the tests run.
 */
export function perDescribe<T>(open: () => Promise<T>, close: (value: T) => Promise<unknown>, what: string): () => T {
  let value: { current: T } | undefined;
  before(async () => {
    value = { current: await open() };
  });
  after(async () => {
    if (value !== undefined) await close(value.current);
  });
  return () => {
    if (value === undefined) throw new Error(`${what} is made before the first test of its describe`);
    return value.current;
  };
}
