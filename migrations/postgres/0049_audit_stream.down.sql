DROP TABLE notify_audit_streams;
