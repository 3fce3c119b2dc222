// The record of one SAML login attempt: stream tenant-<employerId>.samlLogin-<loginId>, one event each,
// success or failure. They exist for the audit trail (auth.saml.login, auth.saml.login_failed); a
// stream per attempt keeps concurrent logins of one employer from contending for one stream.
import { DomainError, type Decider, type DomainEvent } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { SamlFailureReason } from './saml.ts';

export type SamlLoginFailureReason = SamlFailureReason | 'SAML_NOT_ENABLED' | 'USER_DEACTIVATED' | 'EMAIL_IN_OTHER_EMPLOYER';

export type SamlLoginSucceeded = DomainEvent<'SamlLoginSucceeded', { loginId: string; userId: string; assertionId: string; provisioned: boolean }>;
/** `clientIp` helps an auditor tell an IdP misconfiguration (many) from probing (few, odd addresses). */
export type SamlLoginFailed = DomainEvent<'SamlLoginFailed', { loginId: string; reason: SamlLoginFailureReason; clientIp: string }>;
export type SamlLoginEvent = SamlLoginSucceeded | SamlLoginFailed;

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
