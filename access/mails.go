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

// resetByAdminMail tells a member that an admin reset their password: the
// account is theirs, and they should know if they did not ask for it.
var resetByAdminMail = newMail(`Hello {{.Name}},

{{.Admin}}, an admin of {{.Org}} ({{.OrgID}}), reset the ctalk password of {{.UserID}}. Every browser and agent signed in as you was signed out. Your passkeys are still yours: a reset does not touch them, and where your organization asks for a passkey before an approval, nobody can approve for you without one.

If you did not ask for this, talk to your admins, and sign in with your passkey or use "Forgot password?" on the sign-in page:

{{.Link}}
`, `<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.5">
<p>Hello {{.Name}},</p>
<p>{{.Admin}}, an admin of <strong>{{.Org}}</strong> ({{.OrgID}}), reset the ctalk password of <strong>{{.UserID}}</strong>. Every browser and agent signed in as you was signed out. Your passkeys are still yours: a reset does not touch them, and where your organization asks for a passkey before an approval, nobody can approve for you without one.</p>
<p>If you did not ask for this, talk to your admins, and sign in with your passkey or use "Forgot password?" on <a href="{{.Link}}">the sign-in page</a>.</p>
</body></html>
`)
