-- Every fetched work ends in exactly one of title_variants or rejects.
select * from stg_work_outcomes where n_kept + n_rejected <> 1
