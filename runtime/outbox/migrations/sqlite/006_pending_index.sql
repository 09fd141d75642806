-- The claim's indexes are made by 010 and 011 (see
-- migrations/postgres/004_schedule.sql); an index over every pending row,
-- made here by earlier versions, is dropped.
DROP INDEX IF EXISTS {{pending_index}};
