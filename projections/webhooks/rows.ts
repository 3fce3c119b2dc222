// Shapes shared by the webhooks read side and the delivery state machine (src/webhooks/deliveries.ts),
// whose `webhook_deliveries` log the subscription list and the delivery log read.
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
