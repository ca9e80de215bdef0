import { after, before, describe } from 'node:test';
import { openTestCounterStore } from '../../helpers/database.js';
import { startRedisCluster, type RedisCluster } from '../../helpers/redis-cluster.js';
import { rateLimitSuite } from './rate-limits-suite.js';

// The whole rate-limit suite again with the counters in a Redis Cluster of three masters, straight
// on the cluster client: no fallback, so a refused command (CROSSSLOT, MOVED not followed) fails a test.
describe('on a Redis Cluster', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startRedisCluster({ masters: 3 });
  });
  after(async () => cluster?.stop());

  rateLimitSuite('rate limits', { counterStore: () => openTestCounterStore(cluster.url) });
});
