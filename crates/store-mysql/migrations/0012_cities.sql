-- The platform's names for its cities (issue 33; PostgreSQL's 0026, SQLite's 0024). Ids are
-- what every rule compares; a city without a row here is still a city, shown by its id.
CREATE TABLE cities (
    id         BIGINT       NOT NULL PRIMARY KEY,
    name       VARCHAR(320) NOT NULL,
    updated_at BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
