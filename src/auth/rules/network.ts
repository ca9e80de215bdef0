import net from 'node:net';

/**
 * The address masked to its network: /24 for IPv4 (IPv4-mapped IPv6 counts as IPv4), /48 for
 * IPv6. Enough for a customer to recognise a place, and the full address is never stored.
 */
export function maskAddress(ip: string): string | null {
  const v4 = ip.startsWith('::ffff:') && net.isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
  if (net.isIPv4(v4)) return `${v4.split('.').slice(0, 3).join('.')}.0/24`;
  if (!net.isIPv6(ip)) return null;
  const bare = ip.split('%')[0]!;
  const [head = '', tail = ''] = bare.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = bare.includes('::') ? [...headGroups, ...Array<string>(missing).fill('0'), ...tailGroups] : headGroups;
  const network = groups.slice(0, 3).map((group) => parseInt(group, 16).toString(16));
  // Trailing zero groups fold into "::", as an address is usually written.
  while (network.length > 0 && network.at(-1) === '0') network.pop();
  return `${network.join(':')}::/48`;
}
