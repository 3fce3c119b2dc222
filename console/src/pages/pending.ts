// Pages whose routes are built on other branches say so, in words, until /api/openapi has them.
import { isDocumented } from '../api.ts';
import { h } from '../dom.ts';

export async function requireRoute(main: HTMLElement, path: string, what: string): Promise<boolean> {
  if (await isDocumented(path)) return true;
  main.append(h('p', { class: 'notice', role: 'status' }, `${what} is not available on this server yet (${path} is not in /api/openapi).`));
  return false;
}
