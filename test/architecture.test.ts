// The rule of dependencies, read from the import graph of src/ and projections/: core imports nothing
// above it, the read side reads capabilities only through their events, and events files are leaves.
// Every relative `import` and `export ... from` counts, type-only ones included.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

/** Core: infrastructure every capability stands on. */
const CORE = ['src/event-store/', 'src/metrics/', 'src/db/', 'src/http/', 'src/auth/', 'src/worker/', 'src/net/', 'src/crypto/', 'src/config.ts', 'src/logger.ts', 'src/tracing.ts', 'src/app-context.ts', 'src/capability.ts'];
/** The composition root: process start, which may import anything. */
const COMPOSITION_ROOT = ['src/main.ts', 'src/cli.ts', 'src/capabilities.ts'];

type Layer = 'core' | 'composition root' | 'capability' | 'projections';

function layerOf(file: string): Layer {
  if (file.startsWith('projections/')) return 'projections';
  if (CORE.some((core) => (core.endsWith('/') ? file.startsWith(core) : file === core))) return 'core';
  if (COMPOSITION_ROOT.includes(file)) return 'composition root';
  return 'capability';
}

const isEventsFile = (file: string) => file.endsWith('/events.ts');

type Edge = { from: string; to: string };

/** The rule `edge` breaks, or null. Paths are relative to the repository root. */
function brokenRule({ from, to }: Edge): string | null {
  const source = layerOf(from);
  const target = layerOf(to);
  if (source === 'core' && target !== 'core') return 'core imports only core';
  if (source === 'projections' && (target === 'capability' || target === 'composition root') && !isEventsFile(to)) {
    return 'projections import a capability only through its events.ts';
  }
  if (source === 'capability' && isEventsFile(from) && target !== 'core' && !isEventsFile(to)) return 'events files import only zod, core and other events files';
  return null;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|mts)$/.test(entry.name))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** `import ... from './x'`, `export ... from './x'`, `import './x'` and `import('./x')`, over several lines too. */
const RELATIVE_IMPORT = /(?:^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*|^\s*import\s*|\bimport\(\s*)['"](\.{1,2}\/[^'"]+)['"]/gm;

function importGraph(): Edge[] {
  return ['src', 'projections'].flatMap(sourceFiles).flatMap((from) =>
    [...readFileSync(join(ROOT, from), 'utf8').matchAll(RELATIVE_IMPORT)].map((match) => ({ from, to: relative(ROOT, resolve(ROOT, dirname(from), match[1]!)) })),
  );
}

describe('the rule of dependencies', () => {
  it('holds for every import of src/ and projections/', () => {
    const graph = importGraph();
    // The graph was read: the composition root imports every capability.
    expect(graph.filter((edge) => edge.from === 'src/capabilities.ts').length).toBeGreaterThan(10);
    const violations = graph.flatMap((edge) => {
      const rule = brokenRule(edge);
      return rule ? [`${edge.from} -> ${edge.to} (${rule})`] : [];
    });
    expect(violations, `imports breaking the rule of dependencies:\n${violations.join('\n')}\n`).toEqual([]);
  });

  it('tells each kind of import it forbids', () => {
    expect(brokenRule({ from: 'src/http/server.ts', to: 'projections/status.ts' })).toBe('core imports only core');
    expect(brokenRule({ from: 'src/app-context.ts', to: 'src/sso/scim-token.ts' })).toBe('core imports only core');
    expect(brokenRule({ from: 'src/auth/ports.ts', to: 'src/main.ts' })).toBe('core imports only core');
    expect(brokenRule({ from: 'projections/patients/queries.ts', to: 'src/fhir/search-parameters.ts' })).toBe('projections import a capability only through its events.ts');
    expect(brokenRule({ from: 'src/sso/events.ts', to: 'src/sso/saml-checks.ts' })).toBe('events files import only zod, core and other events files');
    expect(brokenRule({ from: 'src/sso/events.ts', to: 'projections/sso/queries.ts' })).toBe('events files import only zod, core and other events files');
    // What the rule allows.
    expect(brokenRule({ from: 'projections/sso/projection.ts', to: 'src/sso/events.ts' })).toBeNull();
    expect(brokenRule({ from: 'projections/sso/projection.ts', to: 'src/event-store/projection.ts' })).toBeNull();
    expect(brokenRule({ from: 'src/tenants/events.ts', to: 'src/identity/events.ts' })).toBeNull();
    expect(brokenRule({ from: 'src/sso/routes/configuration.ts', to: 'projections/sso/queries.ts' })).toBeNull();
    expect(brokenRule({ from: 'src/main.ts', to: 'projections/runner.ts' })).toBeNull();
  });
});
