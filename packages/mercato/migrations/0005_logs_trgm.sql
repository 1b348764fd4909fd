-- Trigram matching for log search (free text and regular expressions on logs.message). pg_trgm is a trusted
-- extension: a database owner can create it without superuser rights. PGlite loads it at start-up.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
