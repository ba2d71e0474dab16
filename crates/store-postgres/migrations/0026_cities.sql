-- The platform's names for its cities (issue 33; SQLite's 0024, MySQL's 0012). Ids are what
-- every rule compares; a city without a row here is still a city, shown by its id.
CREATE TABLE cities (
    id         BIGINT      NOT NULL PRIMARY KEY,
    name       TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
