// A real DNS server for tests, over UDP on 127.0.0.1: answers TXT questions from records the test
// sets, NXDOMAIN for names it has none for, and nothing at all for names the test silenced (a
// resolver's look-up then times out). It records the names it was asked.
import { createSocket } from 'node:dgram';
import dnsPacket from 'dns-packet';

const NXDOMAIN = 3;

export type TestDnsServer = {
  /** `127.0.0.1:<port>`, as EMAIL_DOMAIN_DNS_SERVERS takes it. */
  address: string;
  setTxt(name: string, values: string[]): void;
  silence(name: string): void;
  /** The names asked so far, in order. */
  asked: string[];
  stop(): Promise<void>;
};

export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, string[]>();
  const silenced = new Set<string>();
  const asked: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (message, remote) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    asked.push(name);
    if (silenced.has(name)) return;
    const values = question.type === 'TXT' ? records.get(name) : undefined;
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | (records.has(name) ? 0 : NXDOMAIN),
      questions: [question],
      answers: (values ?? []).map((value) => ({ type: 'TXT' as const, name: question.name, ttl: 60, data: value })),
    });
    socket.send(response, remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    setTxt: (name, values) => void records.set(name.toLowerCase(), values),
    silence: (name) => void silenced.add(name.toLowerCase()),
    asked,
    stop: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
