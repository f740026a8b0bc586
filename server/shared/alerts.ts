/** What the browser takes of alerts: the event types an endpoint may subscribe to. */
export { ALERT_EVENT_TYPES, isAlertEventType } from "../engine/alerts";
export type { AlertEventType } from "../engine/alerts";

/** Delivery statuses (`alert_deliveries.status`). */
export const ALERT_DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type AlertDeliveryStatus = (typeof ALERT_DELIVERY_STATUSES)[number];
