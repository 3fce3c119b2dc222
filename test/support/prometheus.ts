// Reading a /metrics answer as Prometheus would: parsed by a Prometheus text-format parser nobody here
// wrote (parse-prometheus-text-format, prom2json's output), then looked up by name and labels.
import { createRequire } from 'node:module';

type Sample = { labels?: Record<string, string>; value?: string; count?: string; sum?: string; buckets?: Record<string, string> };
export type MetricFamily = { name: string; help: string; type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'; metrics: Sample[] };

// A CommonJS package without types: its one function, typed here.
const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => MetricFamily[];

export type Scrape = {
  families: MetricFamily[];
  /**
   * The sum of the samples of `name` whose labels include `labels`; 0 when none. Of a histogram, its
   * observation count, for histograms without labels only: the parser folds the series of a labelled
   * histogram into one, without their labels (so those are read through their counters).
   */
  value(name: string, labels?: Record<string, string>): number;
  /** The label sets of `name`'s samples. */
  labelSets(name: string): Array<Record<string, string>>;
};

export function parseScrape(text: string): Scrape {
  const families = parsePrometheusTextFormat(text);
  const samplesOf = (name: string, labels: Record<string, string> = {}) =>
    (families.find((family) => family.name === name)?.metrics ?? []).filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value));
  return {
    families,
    value: (name, labels) => {
      const family = families.find((candidate) => candidate.name === name);
      if (family?.type === 'HISTOGRAM' && family.metrics.some((sample) => sample.count === undefined)) throw new Error(`${name} is a labelled histogram, which the parser folds`);
      return samplesOf(name, labels).reduce((sum, sample) => sum + Number(sample.count ?? sample.value), 0);
    },
    labelSets: (name) => samplesOf(name).map((sample) => sample.labels ?? {}),
  };
}

/** GET /metrics at `baseUrl`, with the bearer when given; the parsed answer, or the status when not 200. */
export async function scrape(baseUrl: string, secret?: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`, secret === undefined ? {} : { headers: { authorization: `Bearer ${secret}` } });
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}`);
  expectPrometheusText(response.headers.get('content-type'));
  return parseScrape(await response.text());
}

function expectPrometheusText(contentType: string | null) {
  if (!contentType?.startsWith('text/plain') || !contentType.includes('version=0.0.4')) throw new Error(`not the Prometheus text format: ${contentType}`);
}
