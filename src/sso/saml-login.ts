// The record of one SAML login attempt: stream tenant-<employerId>.samlLogin-<loginId>, one event each,
// success or failure. They exist for the audit trail (auth.saml.login, auth.saml.login_failed); a
// stream per attempt keeps concurrent logins of one employer from contending for one stream.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { SamlLoginEvent } from './events.ts';

export type RecordSamlLogin = { type: 'RecordSamlLogin'; event: SamlLoginEvent };
export type SamlLoginState = { recorded: boolean };

export const samlLoginDecider: Decider<RecordSamlLogin, SamlLoginEvent, SamlLoginState> = {
  initialState: () => ({ recorded: false }),
  evolve: () => ({ recorded: true }),
  decide: (command, state) => {
    if (state.recorded) throw new DomainError(409, 'CONFLICT', `SAML login ${command.event.data.loginId} is already recorded.`);
    return [command.event];
  },
};

export const samlLoginStream = (employerId: string, loginId: string) => tenantStream(employerId, 'samlLogin', loginId);
