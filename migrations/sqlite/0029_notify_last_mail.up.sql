-- The last mail sent to a person's address, which the digest window counts
-- from: read for every mail a worker is about to send and for every person
-- whose events it expands, it was a walk of all the person's deliveries.
CREATE INDEX notify_deliveries_mailed ON notify_deliveries (org_id, user_id, target, finished_at)
    WHERE channel = 'email' AND status = 'sent';
