/** A count and its noun, in the plural unless the count is one: `1 customer`, `2 customers`, `0 rows`. */
export function counted(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}
