package notify_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/mail/mailtest"
	"github.com/ctalk/ctalk/notify"
)

// reachable is a person who chose every channel for every kind, with a
// webhook on a loopback receiver and a browser subscribed through a push
// service on loopback.
type reachable struct {
	hook *receiver
	push *pushService
}

func everyChannel(t *testing.T, s *notify.Service, userID string) *reachable {
	t.Helper()
	ctx := dbtest.Operator()
	all := notify.Settings{Channels: map[notify.Kind][]string{}}
	for _, k := range notify.Kinds {
		all.Channels[k] = []string{notify.ChannelEmail, notify.ChannelWebhook, notify.ChannelPush}
	}
	if _, err := s.SaveSettings(ctx, ctalk.Caller{OrgID: "acme", UserID: userID}, all); err != nil {
		t.Fatal(err)
	}
	r := &reachable{hook: newReceiver(t)}
	_, secret, err := s.AddWebhook(ctx, "acme", userID, userID, r.hook.URL, notify.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	r.hook.secret = secret
	b := newBrowser(t)
	r.push = startPushService(t, b, s)
	if _, err := s.SubscribePush(ctx, ctalk.Caller{OrgID: "acme", UserID: userID}, b.subscription(r.push.URL+"/push/"+userID)); err != nil {
		t.Fatal(err)
	}
	return r
}

// kinds are the kinds of what r's webhook and push service received, and
// the subjects of the mails to address, each sorted.
func (r *reachable) kinds(t *testing.T, srv *mailtest.Server, address string) (hooked, pushed []string, mailed []string) {
	t.Helper()
	r.hook.mu.Lock()
	if r.hook.badSigs > 0 {
		t.Errorf("%d webhook requests were not signed right", r.hook.badSigs)
	}
	for _, b := range r.hook.bodies {
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		hooked = append(hooked, fmt.Sprint(v["type"]))
		if v["type"] == string(notify.KindDraft) && !strings.Contains(fmt.Sprint(v["action"]), "approving sends exactly that text") {
			t.Errorf("a draft's webhook does not say what approving does: %v", v)
		}
	}
	r.hook.mu.Unlock()
	payloads, errs := r.push.got()
	if len(errs) > 0 {
		t.Errorf("the push service could not read what it got: %v", errs)
	}
	for _, p := range payloads {
		pushed = append(pushed, fmt.Sprint(p["kind"]))
		if p["kind"] == string(notify.KindDraft) && !strings.Contains(fmt.Sprint(p["body"]), "approving sends exactly that text") {
			t.Errorf("a draft's push does not say what approving does: %v", p)
		}
	}
	for _, m := range srv.Messages() {
		if slices.Contains(m.To, address) {
			mailed = append(mailed, m.Header.Get("Subject"))
		}
	}
	sort.Strings(hooked)
	sort.Strings(pushed)
	sort.Strings(mailed)
	return hooked, pushed, mailed
}

// TestEveryKindArrivesByEveryChannel queues an event of every kind for Bo,
// who chose email, his webhook and his browser for each, and has Ann's
// questions to him answered and declined through the inbox: every event
// arrives by every channel, the org's webhook gets the kinds it takes, and
// Ann gets the answer and the decline by every channel too.
func TestEveryKindArrivesByEveryChannel(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		srv := mailtest.Start(t)
		s := newService(t, d, srv)
		ctx := dbtest.Operator()
		bo, ann := everyChannel(t, s, "b"), everyChannel(t, s, "a")
		org := newReceiver(t)
		_, secret, err := s.AddWebhook(ctx, "acme", "", "a", org.URL, notify.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		org.secret = secret

		var want []string
		for i, k := range notify.Kinds {
			e := question(fmt.Sprint("q_kind", i))
			e.Kind = k
			queue(t, d, s, e)
			want = append(want, string(k))
		}
		sort.Strings(want)
		drain(t, s)
		hooked, pushed, mailed := bo.kinds(t, srv, "bo@acme.test")
		if !slices.Equal(hooked, want) {
			t.Errorf("Bo's webhook got %v, want every kind %v", hooked, want)
		}
		if !slices.Equal(pushed, want) {
			t.Errorf("Bo's browser got %v, want every kind %v", pushed, want)
		}
		if len(mailed) != len(want) || len(slices.Compact(slices.Clone(mailed))) != len(want) {
			t.Errorf("Bo got %d mails, %v, want one for each of %d kinds", len(mailed), mailed, len(want))
		}
		org.mu.Lock()
		var orgKinds []string
		for _, b := range org.bodies {
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			orgKinds = append(orgKinds, fmt.Sprint(v["type"]))
		}
		org.mu.Unlock()
		sort.Strings(orgKinds)
		if want := []string{"answered", "declined", "question", "urgent"}; !slices.Equal(orgKinds, want) {
			t.Errorf("the org's webhook got %v, want %v", orgKinds, want)
		}

		// Through the inbox: what Ann asks Bo is answered, or declined.
		asker := outboxAsker(d, s)
		for _, resolve := range []func(id string) error{
			func(id string) error {
				_, err := asker.AnswerDirectly(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, id, "Yes, on Friday.")
				return err
			},
			func(id string) error {
				_, err := asker.Decline(ctx, ctalk.Caller{OrgID: "acme", UserID: "b"}, id, "Not mine to say.")
				return err
			},
		} {
			q, err := asker.Ask(ctx, ctalk.Caller{OrgID: "acme", UserID: "a"}, inbox.Ask{To: "b", Text: "Is the release on Friday?"})
			if err != nil {
				t.Fatal(err)
			}
			if err := resolve(q.ID); err != nil {
				t.Fatal(err)
			}
		}
		drain(t, s)
		hooked, pushed, mailed = ann.kinds(t, srv, "ann@acme.test")
		closing := []string{"answered", "declined"}
		if !slices.Equal(hooked, closing) || !slices.Equal(pushed, closing) {
			t.Errorf("Ann's webhook got %v and browser %v, want %v", hooked, pushed, closing)
		}
		if want := []string{"Bo answered your question", "Bo declined your question"}; !slices.Equal(mailed, want) {
			t.Errorf("Ann's mails: %v, want %v", mailed, want)
		}
	})
}
