// The e-mail claim (`tenant-<employerId>.patientEmail-<blind index>`): one patient per e-mail in an
// employer, held by a stream appended to together with the patient's events, not by a read model that lags.
import type { Decider } from '../event-store/decider.ts';
import { emailUnavailable } from '../tenants/email-reservation.ts';
import type { EmailClaimEvent } from './events.ts';

export type EmailClaimState = { holder: string | null };
export type EmailClaimCommand = { type: 'ClaimEmail' | 'ReleaseEmail'; emailIndex: string; patientId: string };

export const emailClaimDecider: Decider<EmailClaimCommand, EmailClaimEvent, EmailClaimState> = {
  initialState: () => ({ holder: null }),
  evolve: (_state, event) => ({ holder: event.type === 'PatientEmailClaimed' ? event.data.patientId : null }),
  decide(command, state) {
    const data = { emailIndex: command.emailIndex, patientId: command.patientId };
    if (command.type === 'ReleaseEmail') return state.holder === command.patientId ? [{ type: 'PatientEmailReleased', data }] : [];
    if (state.holder === command.patientId) return [];
    // The same answer as for an address in another employer's domain (src/tenants/email-reservation.ts).
    if (state.holder !== null) throw emailUnavailable();
    return [{ type: 'PatientEmailClaimed', data }];
  },
};
