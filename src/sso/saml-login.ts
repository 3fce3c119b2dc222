// The record of one successful SAML login: stream tenant-<employerId>.samlLogin-<loginId>, one event
// each, for the audit trail (auth.saml.login); a stream per login keeps concurrent logins of one
// employer from contending for one stream. Refusals are counted instead (saml-refusals.ts); streams of
// older refusals hold one SamlLoginFailed each (auth.saml.login_failed).
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { SamlLoginEvent } from './events.ts';

export type RecordSamlLogin = { type: 'RecordSamlLogin'; event: SamlLoginEvent };
export type SamlLoginState = { recorded: boolean };

export const samlLoginDecider: Decider<RecordSamlLogin, SamlLoginEvent, SamlLoginState> = {
  initialState: () => ({ recorded: false }),
  evolve: () => ({ recorded: true }),
  decide: (command, state) => {
    if (state.recorded) throw new DomainError('conflict', 'CONFLICT', `SAML login ${command.event.data.loginId} is already recorded.`);
    return [command.event];
  },
};

export const samlLoginStream = (employerId: string, loginId: string) => tenantStream(employerId, 'samlLogin', loginId);
