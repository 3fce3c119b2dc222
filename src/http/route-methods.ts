// The methods each registered route pattern serves, so that a request no route answers is told
// whether its path is known (405 with Allow) or not (404). Patterns are fastify's: `:name` is one
// path segment (or part of one, up to the next `/`), `*` the rest of the path.

export type RouteMethods = {
  /** Records a route as fastify registers it (its onRoute hook). */
  add(method: string | string[], url: string): void;
  /** The methods of the routes whose pattern matches `path`, sorted; none: an unknown path. */
  at(path: string): string[];
};

const patternOf = (url: string) =>
  new RegExp(`^${url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+').replace(/\*/g, '.*')}$`);

export function createRouteMethods(): RouteMethods {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  return {
    add(method, url) {
      routes.push({ pattern: patternOf(url), methods: [method].flat() });
    },
    at(path) {
      return [...new Set(routes.filter(({ pattern }) => pattern.test(path)).flatMap(({ methods }) => methods))].sort();
    },
  };
}
