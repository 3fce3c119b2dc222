import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('configuration', () => {
  it('has defaults that run on a fresh machine', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ PORT: 3000, DATA_DIR: './.data', EVENT_STORE: 'postgres', PUBLIC_BASE_URL: 'http://localhost:3000' });
  });

  it('stops start-up with a message naming the bad variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ EVENT_STORE: 'esdb' })).toThrow(/EVENTSTORE_CONNECTION_STRING/);
    expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://x@localhost/db' })).toThrow(/ENCRYPTION_KEY/);
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'maybe' })).toThrow(/WEBHOOK_ALLOW_PRIVATE_NETWORKS/);
    expect(() => loadConfig({ WORKER_RESERVE_CONCURRENCY: '17' })).toThrow(/WORKER_RESERVE_CONCURRENCY/);
  });

  it('puts the ceiling of a key\'s rate limit at 1200 a minute, or the default limit if higher, and never below it', () => {
    expect(loadConfig({}).API_KEY_RATE_LIMIT_MAX_PER_MIN).toBe(1200);
    expect(loadConfig({ API_KEY_RATE_LIMIT_PER_MIN: '5000' }).API_KEY_RATE_LIMIT_MAX_PER_MIN).toBe(5000);
    expect(loadConfig({ API_KEY_RATE_LIMIT_MAX_PER_MIN: '300' }).API_KEY_RATE_LIMIT_MAX_PER_MIN).toBe(300);
    expect(() => loadConfig({ API_KEY_RATE_LIMIT_MAX_PER_MIN: '100' })).toThrow(/API_KEY_RATE_LIMIT_MAX_PER_MIN: is below API_KEY_RATE_LIMIT_PER_MIN/);
  });

  it('takes the DNS servers of domain verification as addresses with optional ports', () => {
    expect(loadConfig({}).EMAIL_DOMAIN_DNS_SERVERS).toEqual([]);
    expect(loadConfig({ EMAIL_DOMAIN_DNS_SERVERS: '1.1.1.1, 127.0.0.1:5353,[::1]:53' }).EMAIL_DOMAIN_DNS_SERVERS).toEqual(['1.1.1.1', '127.0.0.1:5353', '[::1]:53']);
    expect(() => loadConfig({ EMAIL_DOMAIN_DNS_SERVERS: 'dns.example.com' })).toThrow(/EMAIL_DOMAIN_DNS_SERVERS/);
  });
});
