DROP INDEX IF EXISTS notify_deliveries_mailed;
