/**
 * A device's family in a few words, "Firefox on Windows", from its User-Agent: enough for a
 * customer to recognise a device and for the service to tell one from another, and nothing finer
 * (no versions, which change with every update and would make every device look new). A small
 * heuristic rather than a parser dependency: it only needs the handful of browsers and systems
 * people sign in with, and anything else falls back to "Unknown browser" or "unknown system".
 *
 * Order matters: Edge, Opera and Samsung Internet also claim to be Chrome and Safari, Chrome
 * claims to be Safari, and iOS browsers other than Safari name themselves with their own tokens.
 * Headless Chrome (automation, and the project's own browser tests) calls itself HeadlessChrome.
 */
const browsers: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
  [/\bOPR\/|\bOpera\b/, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
  [/(?:\b|Headless)Chrome\/|\bCriOS\/|\bChromium\//, 'Chrome'],
  [/\bSafari\//, 'Safari'],
];

const systems: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bWindows\b/, 'Windows'],
  [/\bAndroid\b/, 'Android'],
  [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

export function deviceFamily(userAgent: string | undefined | null): string {
  const agent = userAgent ?? '';
  const browser = browsers.find(([pattern]) => pattern.test(agent))?.[1] ?? 'Unknown browser';
  const system = systems.find(([pattern]) => pattern.test(agent))?.[1] ?? 'unknown system';
  return `${browser} on ${system}`;
}
