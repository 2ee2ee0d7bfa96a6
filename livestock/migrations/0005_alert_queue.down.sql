DROP TABLE livestock_alert_queue;
