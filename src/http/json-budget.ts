// Bounds what a JSON body costs before it is parsed: while the body streams in, a scan counts its values
// (every scalar, array and object counts one), its nesting (JSON_DEPTH_MAX) and, for routes that name
// one, the items of the array a top-level field holds (a cohort's rows). Past a bound the request is refused at once and the rest of
// the body is never read, so a body over budget costs a scan of what arrived (a few µs per KiB), not a
// parse, a walk and a schema check of all of it. Each route's budget is its `bodyBudget` (src/http/route.ts).
import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import { DomainError } from '../event-store/decider.ts';
import { fieldValidationError } from './errors.ts';
import { JSON_DEPTH_MAX, JSON_TOO_DEEP } from './limits.ts';

export type JsonBodyBudget = {
  /** Values in the whole body. */
  values: number;
  /** Items of the array held by the top-level field `field`, refused with the route's own error. */
  items?: { field: string; max: number; refuse: (max: number) => DomainError };
};

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
/** Longest top-level key remembered: the field of `items` is a short name; longer keys cannot be it. */
const KEY_MAX_BYTES = 64;

/**
 * The scan, fed chunk by chunk. It reads structure only (well-formed or not is for the parser), so it
 * counts exactly what JSON.parse would build for valid JSON: values = 1 + commas + non-empty containers,
 * commas and brackets counted outside strings. Top-level keys written with escapes never match the field
 * (the values bound still holds for them).
 */
export class JsonBudgetScan {
  values = 1;
  items = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private justOpened = false;
  private expectingKey = false;
  private key: number[] | null = null;
  private lastKey = '';
  private inItems = false;
  private readonly itemsField: string | null;

  constructor(itemsField: string | null) {
    this.itemsField = itemsField;
  }

  /** Scans `chunk`; as soon as a count passes its bound, which one. */
  feed(chunk: Buffer, budget: JsonBodyBudget): 'within' | 'depth' | 'values' | 'items' {
    const itemsMax = budget.items?.max ?? Infinity;
    let nextBackslash = chunk.indexOf(BACKSLASH);
    for (let index = 0; index < chunk.length; index++) {
      if (this.inString && !this.escaped && !this.key) {
        // Inside a value string only its end matters: jump to the next quote or backslash.
        const quote = chunk.indexOf(QUOTE, index);
        if (nextBackslash !== -1 && nextBackslash < index) nextBackslash = chunk.indexOf(BACKSLASH, index);
        const stop = nextBackslash !== -1 && (quote === -1 || nextBackslash < quote) ? nextBackslash : quote;
        if (stop === -1) return 'within';
        index = stop;
      }
      const byte = chunk[index]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) {
          this.escaped = true;
          this.key = null;
        } else if (byte === QUOTE) {
          this.inString = false;
          if (this.key) this.lastKey = Buffer.from(this.key).toString('utf8');
          this.key = null;
        } else if (this.key) {
          if (this.key.length < KEY_MAX_BYTES) this.key.push(byte);
          else this.key = null;
        }
        continue;
      }
      if (isWhitespace(byte)) continue;
      if (this.justOpened) {
        this.justOpened = false;
        if (byte !== CLOSE_OBJECT && byte !== CLOSE_ARRAY) {
          this.values += 1;
          if (this.inItems && this.depth === 2) this.items += 1;
        }
      }
      switch (byte) {
        case QUOTE:
          this.inString = true;
          if (this.depth === 1 && this.expectingKey) {
            this.key = [];
            this.lastKey = '';
            this.expectingKey = false;
          }
          break;
        case COMMA:
          this.values += 1;
          if (this.depth === 1) this.expectingKey = true;
          if (this.inItems && this.depth === 2) this.items += 1;
          break;
        case OPEN_OBJECT:
        case OPEN_ARRAY:
          this.depth += 1;
          this.justOpened = true;
          if (this.depth === 1) this.expectingKey = byte === OPEN_OBJECT;
          if (this.depth === 2) this.inItems = byte === OPEN_ARRAY && this.lastKey === this.itemsField;
          break;
        case CLOSE_OBJECT:
        case CLOSE_ARRAY:
          if (this.depth === 2) this.inItems = false;
          this.depth -= 1;
          break;
      }
      if (this.depth > JSON_DEPTH_MAX) return 'depth';
      if (this.values > budget.values) return 'values';
      if (this.items > itemsMax) return 'items';
    }
    return 'within';
  }
}

function refusal(over: 'depth' | 'values' | 'items', budget: JsonBodyBudget): DomainError {
  switch (over) {
    case 'depth':
      // As route.ts's check after parsing says it, for a body that never gets that far.
      return fieldValidationError('body', JSON_TOO_DEEP);
    case 'values':
      return new DomainError('too_large', 'PAYLOAD_TOO_LARGE', `The request body is too large: it holds more than ${budget.values} JSON values.`, { limitValues: budget.values });
    case 'items':
      return budget.items!.refuse(budget.items!.max);
  }
}

/** A preParsing hook that scans JSON bodies (any application/json or +json type) within `budget`. */
export function jsonBodyBudgetHook(budget: JsonBodyBudget): preParsingHookHandler {
  return (request: FastifyRequest, reply: FastifyReply, payload, done) => {
    if (!JSON_CONTENT_TYPE.test(request.headers['content-type'] ?? '')) return done(null, payload);
    const scan = new JsonBudgetScan(budget.items?.field ?? null);
    const scanned = new Transform({
      transform(chunk: Buffer, _encoding, callback: TransformCallback) {
        const over = scan.feed(chunk, budget);
        if (over === 'within') return callback(null, chunk);
        // What is left of the body is not read: the connection closes after the answer.
        reply.header('connection', 'close');
        callback(refusal(over, budget));
      },
    });
    // Not stream.pipeline: a refusal must not destroy the request, whose socket carries the answer.
    payload.on('error', (error) => scanned.destroy(error));
    // fastify listens for the refusal while it reads the body, but not once it has answered otherwise
    // (a body over bodyLimit, a length mismatch): a refusal then would be an uncaught exception.
    scanned.on('error', () => {});
    done(null, payload.pipe(scanned));
  };
}
