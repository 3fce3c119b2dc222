// The invoice aggregate: stream tenant-<employerId>.invoice-<id>. Issued once, paid once (a second
// payment is 409, whatever its paidAt).
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { InvoiceEvent, InvoiceFields } from './events.ts';

export type InvoiceCommand =
  | ({ type: 'IssueInvoice' } & InvoiceFields)
  | { type: 'PayInvoice'; paidAt: string };

export type InvoiceState = { status: 'absent' } | { status: 'issued' | 'paid'; invoice: InvoiceFields };

export const invoiceDecider: Decider<InvoiceCommand, InvoiceEvent, InvoiceState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'InvoiceIssued':
        return { status: 'issued', invoice: event.data };
      case 'InvoicePaid':
        return state.status === 'absent' ? state : { ...state, status: 'paid' };
    }
  },
  decide: (command, state) => {
    if (command.type === 'IssueInvoice') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'ALREADY_EXISTS', 'The invoice exists.');
      const { type: _, ...data } = command;
      return [{ type: 'InvoiceIssued', data }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'Invoice was not found.');
    if (state.status === 'paid') throw new DomainError('conflict', 'ALREADY_PAID', 'The invoice is already paid; a payment is recorded once.');
    return [{ type: 'InvoicePaid', data: { ...state.invoice, paidAt: command.paidAt } }];
  },
};
