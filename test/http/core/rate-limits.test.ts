import { rateLimitSuite } from './rate-limits-suite.js';

rateLimitSuite('rate limits');
