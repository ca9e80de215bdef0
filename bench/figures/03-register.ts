import type { BenchContext, Row } from '../context.js';
import { hashingConnections, registerLoad } from '../customer-load.js';
import { hashingFigure } from './02-login.js';

/** Figure 3: registration, against the HTTP ceiling's. */
export function figureRegister(context: BenchContext): Promise<Row> {
  return hashingFigure(
    context,
    '3',
    `register req/s, ${hashingConnections} connections`,
    (url, seconds, ours) => registerLoad(context, url, seconds, ours),
    async () => {},
  );
}
