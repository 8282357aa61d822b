package notify

import (
	"context"
	"time"
)

// NotifyChannel is the Postgres channel on which a replica that queued
// events due now tells the other replicas' workers to look for them. Its
// notifications carry nothing: a worker reads what is due from the queue.
const NotifyChannel = "ctalk_notify_queued"

// Publish tells the other replicas' workers of the events this replica
// queues, through Postgres, until ctx ends: after each transaction that
// queued events due now, one notification, and one for all the
// transactions that committed while the last was being sent. A
// notification that cannot be sent costs latency only: the other workers
// still poll. It returns at once on SQLite, whose one process has one
// worker.
func (s *Service) Publish(ctx context.Context) {
	if !s.db.Notifies() {
		return
	}
	s.publishing.Store(true)
	defer s.publishing.Store(false)
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.remote:
		}
		sendCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.db.Notify(sendCtx, NotifyChannel, []string{""})
		cancel()
		if (err != nil) != failing && ctx.Err() == nil {
			failing = err != nil
			if failing {
				s.log.Warn("notifications: cannot tell the other replicas of queued events; they find them at their next poll", "error", err)
			} else {
				s.log.Info("notifications: the other replicas are told of queued events again")
			}
		}
	}
}

// Listen wakes this replica's worker when another replica queued events
// (see Publish), and after every (re)connect of the database's shared
// listening connection, when such a notification may have been missed,
// until ctx ends. It returns at once on SQLite.
func (s *Service) Listen(ctx context.Context) {
	s.db.Listen(ctx, NotifyChannel, func() {
		s.listening.Store(true)
		s.wake()
	}, func(string) { s.wake() }, s.log)
}
