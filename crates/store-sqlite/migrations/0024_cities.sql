-- The platform's names for its cities (issue 33; PostgreSQL's 0026, MySQL's 0012). Ids are
-- what every rule compares; a city without a row here is still a city, shown by its id.
CREATE TABLE cities (
    id         INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
