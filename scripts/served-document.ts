/**
 * The OpenAPI document exactly as the service serves it at GET /v1/openapi.json: the app is
 * built on an in-memory SQLite store, with `env` over the defaults, and asked for it (no
 * port). Used by the OpenAPI lint (production's settings) and the SDK's type generation.
 */
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/store/database.js';

export async function servedOpenApi(env: Record<string, string> = {}): Promise<string> {
  const config = loadConfig({
    ...env,
    DATABASE_URL: 'sqlite::memory:',
    LOG_LEVEL: 'silent',
    DEMO_ACCOUNT: 'false',
  });
  const database = openDatabase(config.databaseUrl);
  try {
    await database.schema.migrate();
    const app = await buildApp({ config, database });
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
      if (res.statusCode !== 200) {
        throw new Error(`GET /v1/openapi.json answered ${res.statusCode}: ${res.body}`);
      }
      return res.body;
    } finally {
      await app.close();
    }
  } finally {
    await database.close();
  }
}
