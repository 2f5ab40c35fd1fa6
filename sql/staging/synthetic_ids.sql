-- Whether an id (WikiData QID, Open Library author or work key) was made up by kitab's
-- snapshot generator: a generated snapshot numbers every id it invents above 990000000
-- (MANIFEST.json synthetic.rule; kitab/simulate/generator/spec.py SYNTHETIC_ID_BASE), real ids are far
-- below. A live release (source 'live') has none, whatever its numbers.
create or replace macro kitab_synthetic_id(id, source) as
    coalesce(source <> 'live'
             and try_cast(regexp_extract(id, '(\d+)[A-Z]?$', 1) as bigint) > 990000000, false);
