package access

var inviteMail = newMail(`Hello {{.Name}},

{{.Inviter}} invites you to {{.Org}} on ctalk, where people and their AI agents ask each other questions.

Choose your password to join, as {{.UserID}} in the organization {{.OrgID}}:

{{.Link}}

The link works once, until {{.Expires}}. If you did not expect this invite, ignore this mail: nothing happens without you.
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>{{.Inviter}} invites you to <strong>{{.Org}}</strong> on ctalk, where people and their AI agents ask each other questions.</p>
<p><a href="{{.Link}}">Choose your password to join</a>, as <strong>{{.UserID}}</strong> in the organization <strong>{{.OrgID}}</strong>.</p>
<p>The link works once, until {{.Expires}}. If you did not expect this invite, ignore this mail: nothing happens without you.</p>
</body></html>
`)

var resetMail = newMail(`Hello {{.Name}},

Someone, probably you, asked to reset the ctalk password of {{.UserID}} in {{.Org}} ({{.OrgID}}).

Choose a new password here:

{{.Link}}

The link works once, for {{.Minutes}} minutes. Using it signs you out everywhere else and ends your agents' tokens. If you did not ask, ignore this mail: your password stays as it is.
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>Someone, probably you, asked to reset the ctalk password of <strong>{{.UserID}}</strong> in <strong>{{.Org}}</strong> ({{.OrgID}}).</p>
<p><a href="{{.Link}}">Choose a new password</a></p>
<p>The link works once, for {{.Minutes}} minutes. Using it signs you out everywhere else and ends your agents' tokens. If you did not ask, ignore this mail: your password stays as it is.</p>
</body></html>
`)
