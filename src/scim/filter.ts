// SCIM filter (RFC 7644 section 3.4.2.2) -> SQL condition on a read model, so that list requests are
// filtered by Postgres (with its indexes), never in memory. Parsing is scim2-parse-filter's; this module
// only walks its AST. Every value is a bound parameter.
import { parse, stringify, type Filter, type ValuePath } from 'scim2-parse-filter';
// The parser folds `emails[type eq "work"].value eq "x"` into and(emails[type eq "work"], emails.value eq "x"),
// the same tree as the two separate conditions; its tokens tell the two apart (see subAttributeValuePaths).
import { tokenizer } from 'scim2-parse-filter/lib/src/parser.js';
import { sql, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { instantSchema, INSTANT_RANGE_MESSAGE } from '../http/instant.ts';
import { prototypeNameIn, prototypeNameMessage } from '../http/prototypes.ts';
import { ScimError } from './errors.ts';

export type ScimAttributeType = 'string' | 'boolean' | 'datetime' | 'uuid';

export type ScimColumn = {
  /** A column name (`user_name` or qualified `u.user_name`), or any SQL expression of the row. */
  column: string | FragmentSqlToken;
  /** `uuid` is a string attribute stored as uuid: eq/ne compare as uuid, a non-UUID value matches nothing. */
  type: ScimAttributeType;
  /** String attributes compare case-insensitively (lower() on both sides) unless this is true. */
  caseExact?: boolean;
  /** The column is an array (e.g. member ids): a condition holds when it holds for one element. */
  multiValued?: boolean;
};

/**
 * Lower-cased SCIM attribute paths without the core schema URN, e.g. `username`, `emails.value`,
 * `meta.lastmodified`. A filtered path is written as the parser prints it: `emails[type eq "work"].value`.
 */
export type ScimAttributeMap = Readonly<Record<string, ScimColumn>>;

/** Filters are short in practice; the bound keeps parsing (recursive, regex-based) cheap. */
export const MAX_FILTER_LENGTH = 4096;

const CORE_SCHEMA_PREFIX = /^urn:ietf:params:scim:schemas:core:2\.0:(user|group):/;

export function normaliseAttributePath(path: string): string {
  return path.toLowerCase().replace(CORE_SCHEMA_PREFIX, '');
}

/** Translates a SCIM filter into a condition for a WHERE clause; throws ScimError 400 invalidFilter. */
export function scimFilterToSql(filter: string, attributes: ScimAttributeMap): FragmentSqlToken {
  if (filter.length > MAX_FILTER_LENGTH) throw invalidFilter(`The filter is longer than ${MAX_FILTER_LENGTH} characters.`);
  let ast: Filter;
  let withSubAttribute: ReadonlySet<ValuePath>;
  try {
    ast = parse(filter);
    withSubAttribute = subAttributeValuePaths(filter, ast);
  } catch (error) {
    throw invalidFilter(`The filter cannot be parsed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const prototypeName = prototypeNameInFilter(ast);
  if (prototypeName !== undefined) throw invalidFilter(prototypeNameMessage(prototypeName));
  return translate(ast, { attributes, withSubAttribute });
}

/** The first attribute path segment of a parsed filter that names a prototype member (src/http/prototypes.ts). */
export function prototypeNameInFilter(node: Filter): string | undefined {
  switch (node.op) {
    case 'and':
    case 'or':
      return node.filters.map(prototypeNameInFilter).find((name) => name !== undefined);
    case 'not':
      return prototypeNameInFilter(node.filter);
    case '[]':
      return prototypeNameIn(node.attrPath) ?? prototypeNameInFilter(node.valFilter);
    default:
      return prototypeNameIn(node.attrPath);
  }
}

type Context = { attributes: ScimAttributeMap; withSubAttribute: ReadonlySet<ValuePath> };

function translate(node: Filter, context: Context): FragmentSqlToken {
  switch (node.op) {
    case 'and':
    case 'or': {
      const [first, second] = node.filters;
      if (node.op === 'and' && node.filters.length === 2 && first?.op === '[]' && context.withSubAttribute.has(first) && second) {
        return translateFilteredSubAttribute(first, second, context);
      }
      const glue = node.op === 'and' ? sql.fragment` AND ` : sql.fragment` OR `;
      return sql.fragment`(${sql.join(node.filters.map((child) => translate(child, context)), glue)})`;
    }
    case 'not':
      // IS NOT TRUE, not NOT: a comparison with a NULL column is unknown, and `not` must still match it.
      return sql.fragment`((${translate(node.filter, context)}) IS NOT TRUE)`;
    case '[]':
      return translateValuePath(node, context);
    case 'pr':
      return presence(lookUp(node.attrPath, context));
    default:
      return compare(lookUp(node.attrPath, context), node.op, node.compValue, node.attrPath);
  }
}

/** `emails[type eq "work"].value <op> v`: a column mapped under that exact path. */
function translateFilteredSubAttribute(valuePath: ValuePath, condition: Filter, context: Context): FragmentSqlToken {
  if (condition.op !== 'pr' && !('compValue' in condition)) throw invalidFilter('Unsupported filter after a value path.');
  const prefix = `${normaliseAttributePath(valuePath.attrPath)}.`;
  const attribute = normaliseAttributePath(condition.attrPath);
  const subAttribute = attribute.startsWith(prefix) ? attribute.slice(prefix.length) : attribute;
  const path = `${filteredPathKey(valuePath)}.${subAttribute}`;
  const column = columnAt(context, path);
  if (!column) throw invalidFilter(`Filtering on ${path} is not supported.`);
  return condition.op === 'pr' ? presence(column) : compare(column, condition.op, condition.compValue, path);
}

/**
 * `emails[type eq "work"]` alone holds when the work e-mail exists (if that is mapped);
 * otherwise `emails[value eq "x"]` is read as `emails.value eq "x"`.
 */
function translateValuePath(node: ValuePath, context: Context): FragmentSqlToken {
  const mappedValue = columnAt(context, `${filteredPathKey(node)}.value`);
  if (mappedValue) return presence(mappedValue);
  const parent = normaliseAttributePath(node.attrPath);
  return translate(prefixAttributes(node.valFilter, parent), context);
}

function prefixAttributes(node: Filter, parent: string): Filter {
  switch (node.op) {
    case 'and':
    case 'or':
      return { ...node, filters: node.filters.map((child) => prefixAttributes(child, parent)) };
    case 'not':
      return { ...node, filter: prefixAttributes(node.filter, parent) };
    case '[]':
      throw invalidFilter('Nested value paths are not allowed.');
    default:
      return { ...node, attrPath: `${parent}.${node.attrPath}` };
  }
}

function filteredPathKey(node: ValuePath): string {
  return `${normaliseAttributePath(node.attrPath)}[${stringify(node.valFilter).toLowerCase()}]`;
}

function lookUp(attributePath: string, context: Context): ScimColumn {
  const column = columnAt(context, normaliseAttributePath(attributePath));
  if (!column) throw invalidFilter(`Filtering on ${attributePath} is not supported.`);
  return column;
}

/** The column mapped under a path: the map's own entries only, never what an object inherits. */
function columnAt(context: Context, path: string): ScimColumn | undefined {
  return Object.hasOwn(context.attributes, path) ? context.attributes[path] : undefined;
}

function columnSql(column: ScimColumn): FragmentSqlToken {
  return typeof column.column === 'string'
    ? sql.fragment`${sql.identifier(column.column.split('.'))}`
    : column.column;
}

/** Applies an element condition to a column, or to any element of an array column. */
function onEachValue(column: ScimColumn, condition: (operand: FragmentSqlToken) => FragmentSqlToken): FragmentSqlToken {
  if (!column.multiValued) return condition(columnSql(column));
  return sql.fragment`EXISTS (SELECT 1 FROM unnest(${columnSql(column)}) AS scim_element(value) WHERE ${condition(sql.fragment`scim_element.value`)})`;
}

function presence(column: ScimColumn): FragmentSqlToken {
  if (column.multiValued) return sql.fragment`(cardinality(${columnSql(column)}) > 0)`;
  const operand = columnSql(column);
  // RFC 7644: pr holds for a non-empty value; an empty string is no value.
  return column.type === 'string'
    ? sql.fragment`(${operand} IS NOT NULL AND ${operand} <> '')`
    : sql.fragment`(${operand} IS NOT NULL)`;
}

type ComparisonOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'lt' | 'ge' | 'le';
type CompValue = boolean | null | number | string;

const ORDERING: Record<'gt' | 'lt' | 'ge' | 'le', FragmentSqlToken> = {
  gt: sql.fragment`>`,
  lt: sql.fragment`<`,
  ge: sql.fragment`>=`,
  le: sql.fragment`<=`,
};

function compare(column: ScimColumn, op: ComparisonOperator, value: CompValue, path: string): FragmentSqlToken {
  if (value === null) {
    // `attr eq null` asks for an unassigned attribute; nothing else is defined for null.
    if (op === 'eq') return sql.fragment`(NOT ${presence(column)})`;
    if (op === 'ne') return presence(column);
    throw invalidFilter(`${path} ${op} null is not a valid comparison.`);
  }
  switch (column.type) {
    case 'boolean':
      return compareBoolean(column, op, value, path);
    case 'datetime':
      return compareDatetime(column, op, value, path);
    case 'uuid':
      return compareUuid(column, op, value, path);
    case 'string':
      return compareString(column, op, value, path);
  }
}

function compareBoolean(column: ScimColumn, op: ComparisonOperator, value: CompValue, path: string): FragmentSqlToken {
  if (typeof value !== 'boolean') throw invalidFilter(`${path} is a boolean: compare it with true or false.`);
  if (op === 'eq') return onEachValue(column, (operand) => sql.fragment`(${operand} = ${value})`);
  if (op === 'ne') return onEachValue(column, (operand) => sql.fragment`(${operand} IS DISTINCT FROM ${value})`);
  throw invalidFilter(`${path} is a boolean: only eq, ne and pr apply.`);
}

function compareDatetime(column: ScimColumn, op: ComparisonOperator, value: CompValue, path: string): FragmentSqlToken {
  if (typeof value !== 'string' || !instantSchema.safeParse(value).success) {
    throw invalidFilter(`${path} is a dateTime: compare it with an ISO 8601 string such as "2024-05-13T04:42:34Z", ${INSTANT_RANGE_MESSAGE}.`);
  }
  const instant = sql.fragment`${value}::timestamptz`;
  switch (op) {
    case 'eq':
      return onEachValue(column, (operand) => sql.fragment`(${operand} = ${instant})`);
    case 'ne':
      return onEachValue(column, (operand) => sql.fragment`(${operand} IS DISTINCT FROM ${instant})`);
    case 'gt':
    case 'lt':
    case 'ge':
    case 'le':
      return onEachValue(column, (operand) => sql.fragment`(${operand} ${ORDERING[op]} ${instant})`);
    default:
      throw invalidFilter(`${path} is a dateTime: ${op} does not apply.`);
  }
}

const uuidValue = z.uuid();

function compareUuid(column: ScimColumn, op: ComparisonOperator, value: CompValue, path: string): FragmentSqlToken {
  if (typeof value !== 'string') throw invalidFilter(`${path} is a string: compare it with a quoted value.`);
  if (op === 'eq' || op === 'ne') {
    // A non-UUID can equal no stored id; casting it would be a database error rather than "no match".
    if (!uuidValue.safeParse(value).success) return op === 'eq' ? sql.fragment`FALSE` : sql.fragment`TRUE`;
    return op === 'eq'
      ? onEachValue(column, (operand) => sql.fragment`(${operand} = ${value}::uuid)`)
      : onEachValue(column, (operand) => sql.fragment`(${operand} IS DISTINCT FROM ${value}::uuid)`);
  }
  // Substring and ordering operators work on the text form (lower-case hex).
  return compareString(column, op, value, path, (operand) => sql.fragment`${operand}::text`);
}

function compareString(
  column: ScimColumn,
  op: ComparisonOperator,
  value: CompValue,
  path: string,
  asText: (operand: FragmentSqlToken) => FragmentSqlToken = (operand) => operand,
): FragmentSqlToken {
  if (typeof value !== 'string') throw invalidFilter(`${path} is a string: compare it with a quoted value.`);
  const fold = (expression: FragmentSqlToken) => (column.caseExact ? expression : sql.fragment`lower(${expression})`);
  const right = (bound: string) => fold(sql.fragment`${bound}`);
  return onEachValue(column, (operand) => {
    const left = fold(asText(operand));
    switch (op) {
      case 'eq':
        return sql.fragment`(${left} = ${right(value)})`;
      case 'ne':
        return sql.fragment`(${left} IS DISTINCT FROM ${right(value)})`;
      case 'co':
        return sql.fragment`(${left} LIKE ${right(`%${escapeLike(value)}%`)} ESCAPE '\\')`;
      case 'sw':
        return sql.fragment`(${left} LIKE ${right(`${escapeLike(value)}%`)} ESCAPE '\\')`;
      case 'ew':
        return sql.fragment`(${left} LIKE ${right(`%${escapeLike(value)}`)} ESCAPE '\\')`;
      default:
        return sql.fragment`(${left} ${ORDERING[op]} ${right(value)})`;
    }
  });
}

/** The filter's value is literal text: LIKE's wildcards and escape character lose their meaning. */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (character) => `\\${character}`);
}

/**
 * The value paths written with a sub-attribute (`emails[type eq "work"].value`). The parser closes
 * value paths in source order, so the n-th value path of a post-order walk ends at the n-th `]`.
 */
function subAttributeValuePaths(filter: string, ast: Filter): ReadonlySet<ValuePath> {
  const tokens = tokenizer(filter);
  const closings = tokens.flatMap((token, index) => {
    if (token.type !== 'Bracket' || !token.literal.startsWith(']')) return [];
    return [token.literal === '].' && tokens[index + 1]?.type === 'Word'];
  });
  const valuePaths: ValuePath[] = [];
  const walk = (node: Filter): void => {
    if (node.op === 'and' || node.op === 'or') node.filters.forEach(walk);
    else if (node.op === 'not') walk(node.filter);
    else if (node.op === '[]') {
      walk(node.valFilter);
      valuePaths.push(node);
    }
  };
  walk(ast);
  return new Set(valuePaths.filter((_, index) => closings[index] === true));
}

function invalidFilter(detail: string): ScimError {
  return new ScimError(400, 'invalidFilter', detail);
}
