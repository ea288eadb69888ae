-- Who acted, authenticated, and who they said they were, kept apart (issue 34): `actor` is the
-- admin credential's name or the CLI's operating-system account; `actor_note` is a name given
-- without proof (`--actor`, the name typed at console sign-in, the admin API body's `actor`),
-- shown beside the actor and never instead of it. NULL when none was given.
ALTER TABLE audit_log ADD COLUMN actor_note text;
