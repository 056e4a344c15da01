-- The backend page counts a repository's dead-lettered dispatches.
CREATE INDEX dead_letters_target ON dead_letters (target, kind, died_at);
