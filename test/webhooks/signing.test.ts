import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { buildWebhookRequest, generateSigningSecret } from '../../src/webhooks/signing.ts';

const input = {
  deliveryId: '0f8fad5b-d9cb-469f-a165-70867728950e',
  eventType: 'tapering.approved',
  timestamp: '2026-03-01T10:15:00.000Z',
  apiVersion: '2026-02-01',
  employerId: 'emp_123',
  data: { planId: 'pln_1', note: 'naïve ✓ "quoted"' },
};

describe('generateSigningSecret', () => {
  it('is whsec_ followed by base64 of 32 random bytes', () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(generateSigningSecret()).not.toBe(secret);
  });
});

describe('buildWebhookRequest', () => {
  const secret = generateSigningSecret();
  const signedAt = new Date();
  const { body, headers } = buildWebhookRequest({ ...input, secret, signedAt });

  it('serialises the section 2.3 body', () => {
    expect(JSON.parse(body)).toEqual({
      id: input.deliveryId,
      event: input.eventType,
      timestamp: input.timestamp,
      apiVersion: input.apiVersion,
      employerId: input.employerId,
      data: input.data,
    });
  });

  it('sends the section 6 headers, a service user-agent and the Standard Webhooks headers', () => {
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': `employer-integrations-webhooks/${packageJson.version}`,
      'x-webhook-id': input.deliveryId,
      'x-webhook-event': input.eventType,
      'x-webhook-version': input.apiVersion,
      'x-webhook-timestamp': input.timestamp,
      'webhook-id': input.deliveryId,
      'webhook-timestamp': String(Math.floor(signedAt.getTime() / 1000)),
    });
    expect(headers['x-webhook-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it('signs the exact body for GitHub-style receivers (@octokit/webhooks-methods)', async () => {
    expect(await verify(secret, body, headers['x-webhook-signature']!)).toBe(true);
    expect(await verify(secret, body.replace('emp_123', 'emp_124'), headers['x-webhook-signature']!)).toBe(false);
    expect(await verify(generateSigningSecret(), body, headers['x-webhook-signature']!)).toBe(false);
  });

  it('signs id, time and body for Standard Webhooks receivers (standardwebhooks)', () => {
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'another-delivery' })).toThrow();
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });

  it('keeps the body and its sha256 signature across attempts while the Standard Webhooks time moves on', () => {
    const retry = buildWebhookRequest({ ...input, secret, signedAt: new Date(signedAt.getTime() + 5 * 3600_000) });
    expect(retry.body).toBe(body);
    expect(retry.headers['x-webhook-signature']).toBe(headers['x-webhook-signature']);
    expect(retry.headers['webhook-timestamp']).not.toBe(headers['webhook-timestamp']);
    expect(retry.headers['webhook-signature']).not.toBe(headers['webhook-signature']);
  });

  it('refuses a secret without the whsec_ prefix', () => {
    expect(() => buildWebhookRequest({ ...input, secret: 'plain-secret' })).toThrow(/whsec_/);
  });
});

describe('buildWebhookRequest during a rotation\'s overlap', () => {
  const previous = generateSigningSecret();
  const next = generateSigningSecret();
  const { body, headers } = buildWebhookRequest({ ...input, secret: next, previousSecret: previous, signedAt: new Date() });

  it('keeps x-webhook-signature signed with the previous secret and adds x-webhook-signature-next with the new one', async () => {
    expect(await verify(previous, body, headers['x-webhook-signature']!)).toBe(true);
    expect(await verify(next, body, headers['x-webhook-signature']!)).toBe(false);
    expect(await verify(next, body, headers['x-webhook-signature-next']!)).toBe(true);
  });

  it('carries both v1 signatures in webhook-signature, so either secret verifies', () => {
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(next).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });

  it('signs with the new secret alone without a previous one', async () => {
    const after = buildWebhookRequest({ ...input, secret: next, previousSecret: null });
    expect(after.headers).not.toHaveProperty('x-webhook-signature-next');
    expect(await verify(next, after.body, after.headers['x-webhook-signature']!)).toBe(true);
    expect(() => new Webhook(previous).verify(after.body, after.headers)).toThrow();
  });
});

